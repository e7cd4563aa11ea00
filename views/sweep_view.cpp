#include "sweep_view.h"

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QProcess>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "kiln_program.h"
#include "sweep_model.h"
#include "sweep_plot.h"

namespace kiln::studio {
namespace {
constexpr int kPollMs = 500;
}

SweepView::SweepView(QWidget* parent)
    : QWidget(parent),
      m_model(new SweepModel(this)),
      m_plot(new SweepPlot(this)),
      m_table(new QTableView(this)),
      m_splitter(new QSplitter(Qt::Horizontal, this)),
      m_toolBar(new QToolBar(tr("Sweep"), this)),
      m_summary(new QLabel(this)),
      m_processLine(new QLabel(this)),
      m_poll(new QTimer(this)) {
  setObjectName("sweepView");
  m_toolBar->addAction(tr("New Sweep…"), this, [this] { newSweep(m_options.model); })
      ->setToolTip(tr("Start kiln sweep on this machine or as a Slurm job array"));
  m_toolBar->addAction(tr("Open Log…"), this, &SweepView::chooseLog)
      ->setToolTip(tr("Follow an existing sweep's JSONL log (it may still be growing)"));
  m_stop = m_toolBar->addAction(tr("Stop"), this, &SweepView::stopSweep);
  m_stop->setToolTip(tr("End the sweep started here (resume later with --continue)"));
  m_stop->setEnabled(false);
  m_toolBar->addSeparator();
  m_openPlan = m_toolBar->addAction(tr("Open Plan"), this, &SweepView::openSelectedPlan);
  m_openPlan->setToolTip(tr("Open the selected configuration's plan (or double-click its row)"));
  m_openPlan->setEnabled(false);

  m_table->setObjectName("sweepTable");
  m_table->setModel(m_model);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
  m_table->setTextElideMode(Qt::ElideMiddle);
  QHeaderView* header = m_table->horizontalHeader();
  header->setSectionResizeMode(QHeaderView::ResizeToContents);
  // Column widths from the first rows only: measuring every row's text of a sweep of
  // hundreds of configurations took ~250 ms of the GUI thread per update.
  header->setResizeContentsPrecision(24);
  // The configuration is what a row is: shown whole; the log path takes what is left.
  header->setStretchLastSection(true);
  m_summary->setObjectName("sweepSummary");
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setText(tr("Start a sweep (New Sweep…) or open a sweep's log (Open Log…)."));
  m_processLine->setObjectName("sweepProcessLine");
  m_processLine->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_processLine->setVisible(false);

  m_splitter->addWidget(m_table);
  m_splitter->addWidget(m_plot);
  m_splitter->setStretchFactor(0, 2);
  m_splitter->setStretchFactor(1, 1);
  m_splitter->setChildrenCollapsible(false);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(m_summary);
  layout->addWidget(m_processLine);
  layout->addWidget(m_splitter, 1);

  m_poll->setInterval(kPollMs);
  connect(m_poll, &QTimer::timeout, this, &SweepView::scanNow);
  connect(m_table, &QTableView::activated, this, &SweepView::openSelectedPlan);
  connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            const SweepRow* row = m_model->rowAt(current.row());
            m_plot->setSelectedKey(row ? row->key : QString());
            m_openPlan->setEnabled(row && !row->plan.isEmpty() && QFileInfo::exists(row->plan));
          });
  connect(m_plot, &SweepPlot::pointClicked, this, &SweepView::selectKey);
}

SweepView::~SweepView() {
  if (m_process) {
    m_process->terminate();
    m_process->waitForFinished(3000);
  }
}

void SweepView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const Qt::Orientation wanted = width() < 1000 ? Qt::Vertical : Qt::Horizontal;
  if (m_splitter->orientation() == wanted && m_splitterPlaced) return;
  m_splitterPlaced = true;
  m_splitter->setOrientation(wanted);
  const int room = wanted == Qt::Vertical ? m_splitter->height() : m_splitter->width();
  // Side by side the table comes first (its columns need ~530 px); one above the other,
  // the scatter gets the height (a few rows are enough to pick from).
  m_splitter->setSizes(wanted == Qt::Vertical ? QList<int>{room * 2 / 5, room * 3 / 5}
                                              : QList<int>{room * 2 / 3, room / 3});
}

void SweepView::follow(const QString& logPath) {
  m_state = std::make_shared<SweepScanState>(sweepScanState(QFileInfo(logPath).absoluteFilePath()));
  ++m_generation;  // a scan of the previous log still running is dropped when it ends
  m_scanning = false;
  m_scans = 0;
  m_last = SweepSnapshot{};
  m_model->setRows({});
  m_plot->setRows({}, QString());
  updateSummary();
  m_poll->start();
  scanNow();
}

// One scan at a time, on the thread pool; the GUI thread copies nothing but the result.
void SweepView::scanNow() {
  if (!m_state || m_scanning) return;
  m_scanning = true;
  auto* watcher = new QFutureWatcher<std::pair<SweepSnapshot, bool>>(this);
  const int generation = m_generation;
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    watcher->deleteLater();
    if (generation != m_generation) return;
    m_scanning = false;
    const auto& [snapshot, pending] = watcher->result();
    applySnapshot(snapshot, pending);
  });
  watcher->setFuture(QtConcurrent::run([state = m_state] {
    bool pending = false;
    SweepSnapshot snapshot = scanSweep(state.get(), 4 << 20, &pending);
    return std::make_pair(std::move(snapshot), pending);
  }));
}

void SweepView::applySnapshot(const SweepSnapshot& snapshot, bool pending) {
  ++m_scans;
  const bool changed = snapshot.rows != m_last.rows || snapshot.gate != m_last.gate;
  m_last = snapshot;
  if (changed) {
    m_model->setRows(snapshot.rows);
    m_plot->setRows(snapshot.rows, snapshot.paretoMetric);
    const QModelIndex current = m_table->currentIndex();
    if (const SweepRow* row = m_model->rowAt(current.row())) m_plot->setSelectedKey(row->key);
  }
  updateSummary();
  if (pending) QTimer::singleShot(0, this, &SweepView::scanNow);  // more of a large log
}

void SweepView::updateSummary() {
  if (!m_state) return;
  int counts[6] = {0, 0, 0, 0, 0, 0}, passed = 0, front = 0;
  for (const SweepRow& row : m_last.rows) {
    ++counts[int(row.state)];
    passed += row.state == SweepState::kDone && row.gatePassed;
    front += row.onFront;
  }
  QString text = tr("%1 configurations: %2 done (%3 pass the gate, %4 on the Pareto front), "
                    "%5 running, %6 queued, %7 failed, %8 cancelled")
                     .arg(m_last.rows.size())
                     .arg(counts[int(SweepState::kDone)])
                     .arg(passed)
                     .arg(front)
                     .arg(counts[int(SweepState::kRunning)])
                     .arg(counts[int(SweepState::kQueued)])
                     .arg(counts[int(SweepState::kFailed)])
                     .arg(counts[int(SweepState::kCancelled)]);
  if (const int completed = counts[int(SweepState::kCompleted)]; completed > 0)
    text += tr(", %1 completed (result not logged yet)").arg(completed);
  if (!m_last.gate.isEmpty()) text += tr(" · gate %1").arg(m_last.gate);
  text += tr(" · following %1").arg(m_state->logPath);
  if (m_last.skippedLines > 0)
    text += tr(" · %1 unreadable line(s) skipped").arg(m_last.skippedLines);
  if (!m_last.error.isEmpty()) text += " · " + m_last.error;
  m_summary->setText(text);
  m_summary->setToolTip(m_state->logPath);
}

QString SweepView::statusText() const {
  return m_summary->text();
}

bool SweepView::isRunning() const {
  return m_process && m_process->state() != QProcess::NotRunning;
}

bool SweepView::startSweep(const SweepOptions& given) {
  auto refuse = [this](const QString& why) {
    m_processLine->setText(why);
    m_processLine->setVisible(true);
    return false;
  };
  if (isRunning()) return refuse(tr("a sweep started here is still running: Stop it first"));
  if (given.model.isEmpty()) return refuse(tr("sweep: give the model"));
  // kiln's own default folder is MODEL.sweep in the current directory, which for the
  // studio is anywhere: the folder beside the model, always given.
  SweepOptions options = given;
  if (options.dir.trimmed().isEmpty()) options.dir = QFileInfo(sweepLogPath(options)).path();
  m_options = given;
  auto* process = new QProcess(this);
  m_process = process;
  process->setProcessChannelMode(QProcess::MergedChannels);
  const QStringList args = sweepArguments(options);
  connect(process, &QProcess::readyRead, this, [this, process] {
    QString line;
    while (process->canReadLine()) {
      const QString next = QString::fromUtf8(process->readLine()).trimmed();
      if (!next.isEmpty()) line = next;
    }
    if (!line.isEmpty()) m_processLine->setText(tr("kiln sweep: %1").arg(line));
  });
  connect(process, &QProcess::finished, this, [this, process](int code, QProcess::ExitStatus) {
    const QString rest = QString::fromUtf8(process->readAll()).trimmed().section('\n', -1);
    m_processLine->setText(
        code == 0     ? tr("kiln sweep finished") + (rest.isEmpty() ? QString() : ": " + rest)
        : code == 3   ? tr("kiln sweep finished: no configuration passed the gate")
        : code == 130 ? tr("kiln sweep stopped (resume with --continue)")
                      : tr("kiln sweep failed (exit %1): %2").arg(code).arg(rest));
    m_stop->setEnabled(false);
    process->deleteLater();
    scanNow();
  });
  connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    m_processLine->setText(tr("kiln sweep did not start: %1").arg(process->errorString()));
    m_stop->setEnabled(false);
  });
  m_processLine->setText(tr("kiln sweep: starting %1")
                             .arg(options.slurm ? tr("a Slurm job array") : tr("on this machine")));
  m_processLine->setToolTip(kilnProgram() + " " + args.join(' '));
  m_processLine->setVisible(true);
  m_stop->setEnabled(true);
  follow(sweepLogPath(options));
  process->start(kilnProgram(), args);
  return true;
}

void SweepView::stopSweep() {
  if (isRunning()) m_process->terminate();  // SIGTERM: kiln sweep ends its tasks or scancels
}

void SweepView::newSweep(const QString& model) {
  SweepOptions initial = m_options;
  if (!model.isEmpty()) initial.model = model;
  if (initial.axes.isEmpty()) initial.axes = QStringList{"precision=fp32,fp16"};
  auto* dialog = new SweepDialog(initial, this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &QDialog::accepted, this, [this, dialog] { startSweep(dialog->options()); });
  dialog->open();
}

void SweepView::chooseLog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Sweep Log"), QString(),
                                                    tr("Sweep logs (*.jsonl);;All files (*)"));
  if (!path.isEmpty()) follow(path);
}

void SweepView::selectKey(const QString& key) {
  const int row = m_model->rowOfKey(key);
  if (row < 0) return;
  m_table->setCurrentIndex(m_model->index(row, SweepModel::kKey));
  m_table->scrollTo(m_model->index(row, SweepModel::kKey));
}

void SweepView::openSelectedPlan() {
  const SweepRow* row = m_model->rowAt(m_table->currentIndex().row());
  if (!row) return;
  if (row->plan.isEmpty() || !QFileInfo::exists(row->plan)) {
    m_processLine->setText(tr("%1: no plan yet (%2)").arg(row->key, SweepModel::stateText(*row)));
    m_processLine->setVisible(true);
    return;
  }
  emit openPlanRequested(row->plan, row->key);
}

}  // namespace kiln::studio
