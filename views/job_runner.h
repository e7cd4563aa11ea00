// JobRunner: the one way the studio runs slow work (import, layout, build, profile,
// export) off the GUI thread. A job is a function that polls `cancelled()` and
// reports progress; its completion callback runs on the GUI thread. The status
// bar's jobs widget lists the running jobs with progress and Cancel.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <map>
#include <memory>

namespace kiln::studio {

// What a job's work function sees. Thread-safe.
class JobContext {
 public:
  // `fraction` in 0..1 (negative: unknown); `text` says what it is doing now.
  void progress(double fraction, const QString& text);
  bool cancelled() const { return m_cancel.load(); }
  // For engine loops that poll a flag (BuildCallbacks::cancel).
  const std::atomic<bool>* cancelFlag() const { return &m_cancel; }
  // Set when the work function threw (out of memory, a type error in a file...): what
  // went wrong, one line. The job's results are then unfilled; `done` must not read
  // them. Read it from `done` only (the worker has returned by then).
  bool failed() const { return !m_failure.isEmpty(); }
  const QString& failure() const { return m_failure; }

 private:
  friend class JobRunner;
  std::atomic<bool> m_cancel{false};
  QString m_failure;
  std::function<void(double, const QString&)> m_report;
};

class JobRunner : public QObject {
  Q_OBJECT
 public:
  explicit JobRunner(QObject* parent = nullptr);
  ~JobRunner() override;  // cancels running jobs and waits for them

  // Runs `work` on the thread pool; then `done` on the GUI thread (also when it
  // was cancelled or failed: check the context). An exception out of `work` never
  // escapes: the job fails with its message (context.failure(), jobFailed). Returns
  // the job id.
  int start(const QString& title, std::function<void(JobContext&)> work,
            std::function<void(const JobContext&)> done);
  void cancel(int id);
  // Cancels every job and blocks until their work functions have returned; their
  // completion callbacks are dropped. For owners about to destroy what jobs use.
  void cancelAllAndWait();
  int runningCount() const { return static_cast<int>(m_jobs.size()); }
  // Blocks (processing events) until no job runs; for tests and shutdown.
  bool waitForIdle(int timeoutMs);

 signals:
  void jobStarted(int id, const QString& title);
  void jobProgress(int id, double fraction, const QString& text);
  void jobFinished(int id);
  // The work function of job `id` threw; `message` says what (one line). Emitted
  // after the job's `done`; the main window puts it in the Issues dock unless `done`
  // already did.
  void jobFailed(int id, const QString& title, const QString& message);

 private:
  struct Job;
  std::map<int, std::shared_ptr<Job>> m_jobs;
  int m_nextId = 1;
};

}  // namespace kiln::studio
