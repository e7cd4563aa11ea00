#include "profile_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "engine_report.h"
#include "job_runner.h"
#include "kiln/backends.h"
#include "plan_profiler.h"
#include "studio_document.h"

namespace kiln::studio {

namespace {

constexpr int kTopRows = 15;

// Whether backend `name` is in this build and its device 0 is usable (probed once).
bool backendUsable(const std::string& name) {
  static std::map<std::string, bool> usable;  // GUI thread only
  auto it = usable.find(name);
  if (it != usable.end()) return it->second;
  auto found = findBackend(name);
  return usable[name] = found.isOk() && found.value()->probe(0).available;
}

}  // namespace

ProfilePanel::ProfilePanel(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_jobs(jobs),
      m_banner(new QLabel(this)),
      m_summary(new QLabel(this)),
      m_iterations(new QSpinBox(this)),
      m_run(new QPushButton(tr("Profile"), this)),
      m_table(new QTableWidget(this)) {
  m_banner->setWordWrap(true);
  m_banner->setStyleSheet(
      "QLabel{background:#fff3cd;color:#664d03;border:1px solid #ffe69c;padding:4px}");
  m_summary->setWordWrap(true);
  m_iterations->setRange(1, 100000);
  m_iterations->setValue(20);
  m_iterations->setSuffix(tr(" iterations"));
  m_table->setColumnCount(5);
  // "Ran as": what the profiled engine said it ran (the CPU plan's tactic, the CUDA
  // runtime's text), to set beside the build's choice in the Properties dock.
  m_table->setHorizontalHeaderLabels(
      {tr("Layer"), tr("Median ms"), tr("Average ms"), tr("%"), tr("Ran as")});
  // The layer name sized to its text, "Ran as" (CUDA texts run long) takes the rest.
  m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(4, QHeaderView::Stretch);
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  auto* controls = new QHBoxLayout;
  controls->addWidget(m_iterations);
  controls->addWidget(m_run);
  controls->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(m_banner);
  layout->addLayout(controls);
  layout->addWidget(m_summary);
  layout->addWidget(m_table);
  connect(m_run, &QPushButton::clicked, this, &ProfilePanel::startProfile);
  connect(m_document, &StudioDocument::engineChanged, this, [this] {
    updateState();
    showResult();
  });
  connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
    m_document->selectLayer(m_table->item(row, 0)->data(Qt::UserRole).toInt());
  });
  updateState();
}

void ProfilePanel::setIterations(int iterations) {
  m_iterations->setValue(iterations);
}
QString ProfilePanel::bannerText() const {
  return m_banner->isHidden() ? QString() : m_banner->text();
}
QString ProfilePanel::summaryText() const {
  return m_summary->text();
}
int ProfilePanel::rowCount() const {
  return m_table->rowCount();
}

void ProfilePanel::updateState() {
  const auto plan = m_document->plan();
  QString banner;
  if (!plan && m_document->report()) {
    banner =
        tr("This engine was built by TensorRT; Kiln cannot run it. The times shown are the "
           "ones trtexec measured (--exportProfile).");
  } else if (plan && !backendUsable(plan->identity.backend)) {
    banner =
        tr("No usable CUDA device: this CUDA plan's network is timed on the CPU reference "
           "backend instead (float32, reference kernels). GPU times need a GPU.");
  } else if (plan && !backendUsable("cuda")) {
    banner =
        tr("No GPU: profiling on the CPU backend. Build for CUDA on a machine with a GPU "
           "for GPU timings.");
  }
  m_banner->setText(banner);
  m_banner->setVisible(!banner.isEmpty());
  m_run->setEnabled(plan != nullptr && !m_running);
}

void ProfilePanel::startProfile() {
  const auto plan = m_document->plan();
  const auto report = m_document->report();
  if (!plan || !report || m_running) return;
  if (runRemotely()) return;
  const bool standIn = !backendUsable(plan->identity.backend);
  std::shared_ptr<const Plan> target = plan;
  const int iterations = m_iterations->value();
  auto result = std::make_shared<Result<nlohmann::json>>(Status::ok());
  m_running = true;
  updateState();
  m_jobs->start(
      tr("Profile %1 x%2").arg(QString::fromStdString(report->title)).arg(iterations),
      [target, iterations, result, standIn](JobContext& context) {
        auto progress = [&context](int done, int total) {
          context.progress(double(done) / std::max(total, 1),
                           QObject::tr("run %1 of %2").arg(done).arg(total));
        };
        *result = standIn ? inspector::profilePlanOnCpu(*target, iterations, 1,
                                                        context.cancelFlag(), progress)
                          : inspector::profilePlan(*target, iterations, 1, context.cancelFlag(),
                                                   progress);
      },
      [this, result, report](const JobContext& context) {
        if (context.failed()) *result = internalError(context.failure().toStdString());
        m_running = false;
        updateState();
        m_document->clearIssues("profile");
        if (!result->isOk()) {
          const QString message = QString::fromStdString(result->status().message());
          m_document->addIssue({IssueSeverity::kError, "profile", message, {}});
          emit profileFinished(false, message);
          return;
        }
        auto profiled = std::make_shared<inspector::EngineReport>(*report);
        Status applied = inspector::applyProfile(result->value(), profiled.get());
        if (!applied.isOk()) {
          const QString message = QString::fromStdString(applied.message());
          m_document->addIssue({IssueSeverity::kError, "profile", message, {}});
          emit profileFinished(false, message);
          return;
        }
        m_document->setReport(profiled);
        emit profileFinished(true, m_summary->text());
      });
}

void ProfilePanel::showResult() {
  const auto report = m_document->report();
  m_table->setRowCount(0);
  if (!report || report->totalMs < 0) {
    m_summary->setText(report ? tr("Untimed engine.") : tr("No engine open."));
    return;
  }
  std::vector<int> order(report->layers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return report->layers[a].milliseconds > report->layers[b].milliseconds;
  });
  order.resize(std::min<size_t>(order.size(), kTopRows));
  m_summary->setText(report->profileIterations > 0
                         ? tr("%1 profiled runs: %2 ms summed over %3 layers (medians). Top %4:")
                               .arg(report->profileIterations)
                               .arg(report->totalMs, 0, 'f', 4)
                               .arg(report->layers.size())
                               .arg(order.size())
                         : tr("Build-time tactic timings: %1 ms over %2 layers. Profile for "
                              "measured end-to-end per-layer times.")
                               .arg(report->totalMs, 0, 'f', 4)
                               .arg(report->layers.size()));
  m_table->setRowCount(static_cast<int>(order.size()));
  for (int row = 0; row < static_cast<int>(order.size()); ++row) {
    const auto& layer = report->layers[order[row]];
    auto* name = new QTableWidgetItem(QString::fromStdString(layer.name));
    name->setData(Qt::UserRole, order[row]);
    m_table->setItem(row, 0, name);
    m_table->setItem(row, 1, new QTableWidgetItem(QString::number(layer.milliseconds, 'f', 4)));
    m_table->setItem(
        row, 2,
        new QTableWidgetItem(layer.averageMs < 0 ? "-" : QString::number(layer.averageMs, 'f', 4)));
    m_table->setItem(row, 3, new QTableWidgetItem(QString::number(layer.percentage, 'f', 1)));
    auto* ran = new QTableWidgetItem(QString::fromStdString(layer.profiledImplementation));
    ran->setToolTip(ran->text());
    m_table->setItem(row, 4, ran);
  }
}

}  // namespace kiln::studio
