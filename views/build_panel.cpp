// BuildPanel: its pages and the two-way sync between widgets and the document's
// BuilderConfig. Running the build is in build_panel_run.cpp.
#include "build_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include "constraints_table.h"
#include "job_runner.h"
#include "kiln/backends.h"
#include "kiln/builder.h"
#include "kiln/passes.h"
#include "profiles_editor.h"
#include "shapes_dialog.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

const uint32_t kSourceBits[4] = {kTacticCudnn, kTacticCublasLt, kTacticKiln, kTacticBlas};
const ConstraintMode kModes[3] = {ConstraintMode::kNone, ConstraintMode::kPrefer,
                                  ConstraintMode::kObey};
const ProfilingVerbosity kVerbosities[3] = {
    ProfilingVerbosity::kNone, ProfilingVerbosity::kLayerNamesOnly, ProfilingVerbosity::kDetailed};

QCheckBox* checkBox(const QString& text, const QString& tip, QWidget* parent) {
  auto* box = new QCheckBox(text, parent);
  box->setToolTip(tip);
  return box;
}

// A line edit with a "Browse…" button beside it.
QWidget* withBrowse(QLineEdit* edit, QPushButton* browse) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(edit, 1);
  layout->addWidget(browse);
  return row;
}

}  // namespace

BuildPanel::BuildPanel(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent), m_document(document), m_jobs(jobs) {
  auto* pages = new QTabWidget(this);
  pages->addTab(createPrecisionPage(), tr("Precision"));
  m_profiles = new ProfilesEditor(this);
  pages->addTab(m_profiles, tr("Profiles"));
  pages->addTab(createOptionsPage(), tr("Options"));
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(pages, 1);
  layout->addWidget(createRunBox());

  connect(m_constraints, &ConstraintsTable::rulesEdited, this, &BuildPanel::applyToConfig);
  connect(m_profiles, &ProfilesEditor::profilesEdited, this, [this] {
    m_shapesConfirmed = true;  // the user set the shapes in the dock
    applyToConfig();
  });
  connect(m_document, &StudioDocument::modelChanged, this, &BuildPanel::onModelChanged);
  connect(m_document, &StudioDocument::engineChanged, this, &BuildPanel::onEngineChanged);
  connect(m_document, &StudioDocument::buildConfigChanged, this, &BuildPanel::loadFromConfig);
  onModelChanged();
  probeCuda();
}

QWidget* BuildPanel::createPrecisionPage() {
  auto* page = new QWidget(this);
  m_tf32 =
      checkBox(tr("TF32"), tr("float32 GEMMs and convolutions may use TF32 tensor cores"), page);
  m_fp16 = checkBox(tr("FP16"), tr("layers may run in float16 where it is faster"), page);
  m_bf16 = checkBox(tr("BF16"), tr("layers may run in bfloat16 where it is faster"), page);
  m_int8 = checkBox(tr("INT8"),
                    tr("INT8 builds start from calibration: use the Calibration view "
                       "(Calibrate, then Build INT8), or `kiln build --int8`"),
                    page);
  m_fp8 = checkBox(tr("FP8"),
                   tr("FP8 (E4M3) GEMMs from the model's float8 QuantizeLinear/"
                      "DequantizeLinear (explicit quantization; CUDA on compute capability "
                      "8.9+, else the host fallback)"),
                   page);
  m_fp8->setObjectName("fp8");
  m_int8->setEnabled(false);  // the Calibration view owns INT8 builds (cache and ranges)
  auto* flags = new QHBoxLayout;
  for (QCheckBox* box : {m_tf32, m_fp16, m_bf16, m_int8, m_fp8}) {
    flags->addWidget(box);
    connect(box, &QCheckBox::toggled, this, &BuildPanel::applyToConfig);
  }
  flags->addStretch(1);

  m_mode = new QComboBox(page);
  m_mode->setObjectName("constraintMode");
  m_mode->addItem(tr("none: rules are ignored"));
  m_mode->addItem(tr("prefer: rules win where a layer can follow them"));
  m_mode->addItem(tr("obey: a rule that cannot hold fails the build"));
  connect(m_mode, &QComboBox::currentIndexChanged, this, &BuildPanel::applyToConfig);
  m_constraints = new ConstraintsTable(page);
  m_rulesIgnored = new QLabel(page);
  m_rulesIgnored->setObjectName("rulesIgnored");
  m_rulesIgnored->setWordWrap(true);
  m_rulesIgnored->setStyleSheet("QLabel { color: #8a5a00; background: #fff4d6; padding: 4px; }");
  m_rulesIgnored->hide();

  auto* layout = new QVBoxLayout(page);
  layout->addLayout(flags);
  auto* mode = new QFormLayout;
  mode->addRow(tr("Constraints:"), m_mode);
  layout->addLayout(mode);
  layout->addWidget(m_rulesIgnored);
  layout->addWidget(m_constraints, 1);
  return page;
}

QWidget* BuildPanel::createOptionsPage() {
  auto* page = new QWidget(this);
  auto* sources = new QGroupBox(tr("Tactic sources"), page);
  auto* sourceRow = new QHBoxLayout(sources);
  const QString names[4] = {tr("cuDNN"), tr("cuBLASLt"), tr("Kiln kernels"), tr("host BLAS")};
  for (int i = 0; i < 4; ++i) {
    m_sources[i] = new QCheckBox(names[i], sources);
    sourceRow->addWidget(m_sources[i]);
    connect(m_sources[i], &QCheckBox::toggled, this, &BuildPanel::applyToConfig);
  }
  m_level = new QSpinBox(page);
  m_level->setRange(0, 5);
  m_level->setToolTip(
      tr("0: each layer takes its first tactic, untimed; 1-5: every supported "
         "tactic is timed, more runs each as the level rises"));
  m_workspace = new QSpinBox(page);
  m_workspace->setRange(0, 1 << 20);
  m_workspace->setSuffix(tr(" MiB"));
  m_verbosity = new QComboBox(page);
  for (ProfilingVerbosity v : kVerbosities) m_verbosity->addItem(profilingVerbosityName(v));
  m_backend = new QComboBox(page);
  m_backend->setObjectName("backend");
  m_backend->addItem(QString::fromStdString(backends().front().name));  // probeCuda adds the rest
  m_cachePath = new QLineEdit(page);
  m_cachePath->setObjectName("timingCache");
  m_cachePath->setPlaceholderText(tr("none (read when present, then updated)"));
  m_planPath = new QLineEdit(page);
  m_planPath->setObjectName("planPath");
  m_planPath->setPlaceholderText(tr("keep in memory only"));
  auto* browseCache = new QPushButton(tr("Browse…"), page);
  auto* browsePlan = new QPushButton(tr("Browse…"), page);

  auto* passes = new QGroupBox(tr("Graph passes (unchecked: disabled)"), page);
  auto* passRow = new QVBoxLayout(passes);
  m_passes = new QListWidget(passes);
  m_passes->setObjectName("passes");
  for (const PassInfo& info : listPasses()) {
    auto* item = new QListWidgetItem(QString::fromStdString(info.name), m_passes);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(Qt::Checked);
    item->setToolTip(tr("%1\nruns at optimization level >= %2")
                         .arg(QString::fromStdString(info.description))
                         .arg(info.minimumLevel));
  }
  m_passes->setMaximumHeight(m_passes->sizeHintForRow(0) * 5 + 8);
  passRow->addWidget(m_passes);
  connect(m_passes, &QListWidget::itemChanged, this, &BuildPanel::applyToConfig);

  auto* form = new QFormLayout;
  form->addRow(tr("Optimization level:"), m_level);
  form->addRow(tr("Workspace per layer:"), m_workspace);
  form->addRow(tr("Profiling verbosity:"), m_verbosity);
  form->addRow(tr("Backend:"), m_backend);
  form->addRow(tr("Timing cache:"), withBrowse(m_cachePath, browseCache));
  form->addRow(tr("Save plan to:"), withBrowse(m_planPath, browsePlan));
  auto* layout = new QVBoxLayout(page);
  layout->addWidget(sources);
  layout->addLayout(form);
  layout->addWidget(passes);
  layout->addStretch(1);

  connect(m_level, &QSpinBox::valueChanged, this, &BuildPanel::applyToConfig);
  connect(m_workspace, &QSpinBox::valueChanged, this, &BuildPanel::applyToConfig);
  connect(m_verbosity, &QComboBox::currentIndexChanged, this, &BuildPanel::applyToConfig);
  connect(m_backend, &QComboBox::currentIndexChanged, this, &BuildPanel::updateCommandLine);
  connect(m_cachePath, &QLineEdit::textChanged, this, &BuildPanel::updateCommandLine);
  connect(m_planPath, &QLineEdit::textChanged, this, &BuildPanel::updateCommandLine);
  connect(browseCache, &QPushButton::clicked, this, [this] {
    const QString path = browseFile(tr("Timing cache"), tr("Timing cache (*.json *.cache)"), true);
    if (!path.isEmpty()) m_cachePath->setText(path);
  });
  connect(browsePlan, &QPushButton::clicked, this, [this] {
    const QString path = browseFile(tr("Save plan"), tr("Kiln plan (*.kiln)"), true);
    if (!path.isEmpty()) m_planPath->setText(path);
  });
  return page;
}

QWidget* BuildPanel::createRunBox() {
  auto* box = new QWidget(this);
  m_command = new QLineEdit(box);
  m_command->setReadOnly(true);
  m_command->setObjectName("commandLine");
  m_command->setToolTip(tr("The same build from the command line"));
  auto* copy = new QPushButton(tr("Copy"), box);
  m_build = new QPushButton(tr("Build"), box);
  m_cancel = new QPushButton(tr("Cancel"), box);
  m_cancel->setEnabled(false);
  m_progress = new QProgressBar(box);
  m_progress->setRange(0, 1000);
  m_progress->setTextVisible(false);
  m_status = new QLabel(box);
  m_status->setWordWrap(true);

  auto* command = new QHBoxLayout;
  command->addWidget(m_command, 1);
  command->addWidget(copy);
  auto* run = new QHBoxLayout;
  run->addWidget(m_build);
  run->addWidget(m_cancel);
  run->addWidget(m_progress, 1);
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(command);
  layout->addLayout(run);
  layout->addWidget(m_status);

  connect(copy, &QPushButton::clicked, this,
          [this] { QGuiApplication::clipboard()->setText(m_command->text()); });
  connect(m_build, &QPushButton::clicked, this, &BuildPanel::startBuild);
  connect(m_cancel, &QPushButton::clicked, this, &BuildPanel::cancelBuild);
  connect(m_jobs, &JobRunner::jobProgress, this,
          [this](int id, double fraction, const QString& text) {
            if (id != m_buildJob) return;
            m_progress->setValue(fraction < 0 ? 0 : static_cast<int>(fraction * 1000));
            m_status->setText(text);
          });
  return box;
}

QString BuildPanel::browseFile(const QString& title, const QString& filter, bool save) {
  return save ? QFileDialog::getSaveFileName(this, title, QString(), filter, nullptr,
                                             QFileDialog::DontConfirmOverwrite)
              : QFileDialog::getOpenFileName(this, title, QString(), filter);
}

void BuildPanel::onModelChanged() {
  std::shared_ptr<const Network> network = m_document->network();
  const BuilderConfig& config = m_document->buildConfig();
  m_loading = true;
  m_constraints->model()->setNetwork(network.get());
  m_constraints->model()->setRules(config.layerPrecisions, config.layerOutputTypes);
  m_proposal =
      network ? proposeShapes(*network, m_document->modelPath().toStdString()) : ShapeProposal{};
  m_shapesConfirmed = m_valuesConfirmed = false;
  m_inputValues.clear();
  if (m_shapesDialog) m_shapesDialog->reject();  // it was for the previous model
  m_profiles->setNetwork(network.get(), config.profiles, m_proposal.profile);
  m_loading = false;
  m_status->clear();  // it spoke of the previous model's build
  m_progress->setValue(0);
  loadFromConfig();
  applyToConfig();  // the profiles the editor proposed for this model
}

// An engine this panel did not build (an INT8 build in the Calibration view, a plan
// or trtexec export opened) replaces the one the status line describes. A profile
// run keeps the plan and so the status.
void BuildPanel::onEngineChanged() {
  if (m_document->plan() == m_builtPlan) return;
  m_builtPlan.reset();
  if (isBuilding()) return;  // the line shows this build's progress
  m_status->clear();
  m_progress->setValue(0);
}

QString BuildPanel::statusText() const {
  return m_status->text();
}

bool BuildPanel::rulesIgnoredWarningShown() const {
  return !m_rulesIgnored->isHidden();
}

void BuildPanel::updateRulesWarning() {
  const BuilderConfig& config = m_document->buildConfig();
  const size_t rules = config.layerPrecisions.size() + config.layerOutputTypes.size();
  m_rulesIgnored->setVisible(rules > 0 && config.precisionConstraints == ConstraintMode::kNone);
  const QString what = rules == 1 ? tr("1 per-layer rule is ignored")
                                  : tr("%1 per-layer rules are ignored").arg(rules);
  m_rulesIgnored->setText(
      tr("%1: Constraints is \"none\". Choose \"prefer\" or \"obey\" to apply them.").arg(what));
}

void BuildPanel::setLayerPrecision(const QString& node, DataType precision) {
  ConstraintsModel* model = m_constraints->model();
  const int row = model->rowOf(node);
  if (row < 0) {
    m_status->setText(tr("no node named '%1' in the model").arg(node));
    return;
  }
  model->setRule(row, ConstraintsModel::kPrecision, precision);  // rulesEdited -> config
}

void BuildPanel::setConstraintMode(ConstraintMode mode) {
  for (int i = 0; i < 3; ++i)
    if (kModes[i] == mode) m_mode->setCurrentIndex(i);
}

void BuildPanel::applyToConfig() {
  if (m_loading) return;
  BuilderConfig config = m_document->buildConfig();
  config.tf32 = m_tf32->isChecked();
  config.fp16 = m_fp16->isChecked();
  config.bf16 = m_bf16->isChecked();
  config.fp8 = m_fp8->isChecked();
  config.precisionConstraints = kModes[std::max(0, m_mode->currentIndex())];
  config.layerPrecisions = m_constraints->model()->precisionRules();
  config.layerOutputTypes = m_constraints->model()->outputTypeRules();
  config.tacticSources = 0;
  for (int i = 0; i < 4; ++i)
    if (m_sources[i]->isChecked()) config.tacticSources |= kSourceBits[i];
  config.optimizationLevel = m_level->value();
  config.disabledPasses.clear();
  for (int i = 0; i < m_passes->count(); ++i)
    if (m_passes->item(i)->checkState() != Qt::Checked)
      config.disabledPasses.push_back(m_passes->item(i)->text().toStdString());
  config.workspaceLimitBytes = static_cast<int64_t>(m_workspace->value()) << 20;
  config.profilingVerbosity = kVerbosities[std::max(0, m_verbosity->currentIndex())];
  // Invalid profiles stay out of the config; the editor shows why and Build waits.
  if (m_profiles->isValid()) config.profiles = m_profiles->profiles();
  m_applying = true;
  m_document->setBuildConfig(config);
  m_applying = false;
  updateCommandLine();
  updateBuildEnabled();
  updateRulesWarning();
}

void BuildPanel::loadFromConfig() {
  if (m_applying) return;
  const BuilderConfig& config = m_document->buildConfig();
  m_loading = true;
  m_tf32->setChecked(config.tf32);
  m_fp16->setChecked(config.fp16);
  m_bf16->setChecked(config.bf16);
  m_int8->setChecked(config.int8);
  m_fp8->setChecked(config.fp8);
  for (int i = 0; i < 3; ++i)
    if (kModes[i] == config.precisionConstraints) m_mode->setCurrentIndex(i);
  m_constraints->model()->setRules(config.layerPrecisions, config.layerOutputTypes);
  for (int i = 0; i < 4; ++i) m_sources[i]->setChecked(config.tacticSources & kSourceBits[i]);
  m_level->setValue(config.optimizationLevel);
  for (int i = 0; i < m_passes->count(); ++i) {
    QListWidgetItem* item = m_passes->item(i);
    const bool off = std::find(config.disabledPasses.begin(), config.disabledPasses.end(),
                               item->text().toStdString()) != config.disabledPasses.end();
    item->setCheckState(off ? Qt::Unchecked : Qt::Checked);
  }
  m_workspace->setValue(static_cast<int>(config.workspaceLimitBytes >> 20));
  for (int i = 0; i < 3; ++i)
    if (kVerbosities[i] == config.profilingVerbosity) m_verbosity->setCurrentIndex(i);
  if (!config.profiles.empty())
    m_profiles->setNetwork(m_document->network().get(), config.profiles, m_proposal.profile);
  m_loading = false;
  updateCommandLine();
  updateBuildEnabled();
  updateRulesWarning();
}

bool BuildPanel::setPassEnabled(const QString& pass, bool enabled) {
  const QList<QListWidgetItem*> found = m_passes->findItems(pass, Qt::MatchExactly);
  if (found.isEmpty()) return false;
  found.front()->setCheckState(enabled ? Qt::Checked : Qt::Unchecked);
  return true;
}

QString BuildPanel::commandLine() const {
  return m_command->text();
}

void BuildPanel::updateCommandLine() {
  const QString model =
      m_document->modelPath().isEmpty() ? QStringLiteral("model.onnx") : m_document->modelPath();
  QString plan = m_planPath->text();
  if (plan.isEmpty()) {
    const QFileInfo info(model);
    plan = info.path() + "/" + info.completeBaseName() + ".kiln";
  }
  m_command->setText(QString::fromStdString(kilnBuildCommandLine(
      m_document->buildConfig(), model.toStdString(), plan.toStdString(),
      m_backend->currentText().toStdString(), m_cachePath->text().toStdString())));
  m_command->setCursorPosition(0);
}

void BuildPanel::updateBuildEnabled() {
  const bool ready = m_document->network() && m_profiles->isValid() && !isBuilding();
  m_build->setEnabled(ready);
  m_build->setToolTip(!m_document->network()   ? tr("Open an ONNX model first")
                      : !m_profiles->isValid() ? m_profiles->problem()
                                               : QString());
}

}  // namespace kiln::studio
