#include "job_runner.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>
#include <new>
#include <stdexcept>

#include "kiln/status.h"

namespace kiln::studio {

struct JobRunner::Job {
  QString title;
  JobContext context;
  QFuture<void> future;
};

void JobContext::progress(double fraction, const QString& text) {
  if (m_report) m_report(fraction, text);
}

namespace {

// Runs `work`; an exception becomes the context's failure message instead of being
// stored in the QFuture (where nothing would rethrow it, and the job would look done).
void runCatching(const std::function<void(JobContext&)>& work, JobContext& context,
                 QString* failure) {
  auto fail = [failure](const std::string& what) {
    *failure = QString::fromStdString(escapeControlCharacters(what));
  };
  try {
    work(context);
  } catch (const std::bad_alloc&) {
    fail(
        "out of memory (std::bad_alloc: a size in the input is larger than this "
        "machine's memory)");
  } catch (const std::length_error& e) {
    fail(std::string("out of memory (std::length_error: ") + e.what() + ")");
  } catch (const std::exception& e) {
    fail(std::string("failed: ") + e.what());
  } catch (...) {
    fail("failed: an unknown exception");
  }
}

}  // namespace

JobRunner::JobRunner(QObject* parent) : QObject(parent) {}

JobRunner::~JobRunner() {
  cancelAllAndWait();
}

void JobRunner::cancelAllAndWait() {
  for (auto& [id, job] : m_jobs) job->context.m_cancel = true;
  for (auto& [id, job] : m_jobs) job->future.waitForFinished();
  m_jobs.clear();
}

int JobRunner::start(const QString& title, std::function<void(JobContext&)> work,
                     std::function<void(const JobContext&)> done) {
  const int id = m_nextId++;
  auto job = std::make_shared<Job>();
  job->title = title;
  QPointer<JobRunner> self(this);
  // Progress crosses to the GUI thread as a queued call; the worker never touches widgets.
  job->context.m_report = [self, id](double fraction, const QString& text) {
    if (!self) return;
    QMetaObject::invokeMethod(
        self,
        [self, id, fraction, text] {
          if (self) emit self->jobProgress(id, fraction, text);
        },
        Qt::QueuedConnection);
  };
  m_jobs[id] = job;
  auto* watcher = new QFutureWatcher<void>(this);
  connect(watcher, &QFutureWatcher<void>::finished, this, [this, watcher, id, done] {
    watcher->deleteLater();
    auto it = m_jobs.find(id);
    if (it == m_jobs.end()) return;
    std::shared_ptr<Job> finished = it->second;
    m_jobs.erase(it);
    emit jobFinished(id);  // first: what `done` starts next is already the newest job
    if (done) done(finished->context);
    // After `done`, so a listener can see whether `done` reported the failure itself.
    if (finished->context.failed())
      emit jobFailed(id, finished->title, finished->context.failure());
  });
  job->future =
      QtConcurrent::run([job, work] { runCatching(work, job->context, &job->context.m_failure); });
  watcher->setFuture(job->future);
  emit jobStarted(id, title);
  return id;
}

void JobRunner::cancel(int id) {
  auto it = m_jobs.find(id);
  if (it != m_jobs.end()) it->second->context.m_cancel = true;
}

bool JobRunner::waitForIdle(int timeoutMs) {
  QElapsedTimer timer;
  timer.start();
  while (!m_jobs.empty() && timer.elapsed() < timeoutMs)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
  if (!m_jobs.empty()) {  // say which job kept it waiting
    QStringList titles;
    for (const auto& [id, job] : m_jobs)
      titles << QStringLiteral("%1 (%2)").arg(job->title,
                                              job->future.isFinished() ? "finished" : "running");
    qWarning("JobRunner: still busy after %d ms: %s", timeoutMs, qPrintable(titles.join(", ")));
  }
  return m_jobs.empty();
}

}  // namespace kiln::studio
