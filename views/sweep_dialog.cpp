#include "sweep_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <tuple>

#include "sweep.h"

namespace kiln::studio {
namespace {

void addValue(QStringList* args, const char* option, const QString& value) {
  if (!value.trimmed().isEmpty()) *args << QString("--") + option << value.trimmed();
}

}  // namespace

QStringList sweepArguments(const SweepOptions& o) {
  QStringList args{"sweep", o.model};
  for (const QString& axis : o.axes)
    if (!axis.trimmed().isEmpty()) args << "--vary" << axis.trimmed();
  addValue(&args, "max-error", o.maxError);
  if (o.backend != "cpu") addValue(&args, "backend", o.backend);
  addValue(&args, "min-shapes", o.minShapes);
  addValue(&args, "opt-shapes", o.optShapes);
  addValue(&args, "max-shapes", o.maxShapes);
  addValue(&args, "accuracy-data", o.accuracyData);
  addValue(&args, "calib-cache", o.calibCache);
  addValue(&args, "calib-data", o.calibData);
  if (o.iterations != 20) args << "--iterations" << QString::number(o.iterations);
  addValue(&args, "dir", o.dir);
  if (o.jobs != 1) args << "--jobs" << QString::number(o.jobs);
  if (o.resume) args << "--continue";
  if (o.retryFailed) args << "--retry-failed";
  if (o.slurm) {
    args << "--slurm";
    addValue(&args, "partition", o.partition);
    addValue(&args, "gres", o.gres);
    addValue(&args, "time", o.time);
    if (o.arrayMax > 0) args << "--array-max" << QString::number(o.arrayMax);
  }
  return args;
}

QString sweepLogPath(const SweepOptions& options) {
  QString dir = options.dir.trimmed();
  if (dir.isEmpty()) {
    const QFileInfo model(options.model);
    dir = model.path() + "/" + model.completeBaseName() + ".sweep";
  }
  return QFileInfo(dir + "/sweep.jsonl").absoluteFilePath();
}

SweepDialog::SweepDialog(const SweepOptions& o, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("New Sweep"));
  auto* form = new QFormLayout;
  m_model = addPath(form, tr("Model"), false);
  m_model->setText(o.model);
  m_axes = new QPlainTextEdit(o.axes.join('\n'), this);
  m_axes->setPlaceholderText("precision=fp32,fp16,int8\noptimization-level=2,3");
  m_axes->setToolTip(tr("One --vary axis a line: NAME=V1,V2,... (values holding commas: ';')"));
  m_axes->setFixedHeight(fontMetrics().lineSpacing() * 4 + 12);
  form->addRow(tr("Axes (--vary)"), m_axes);
  m_maxError = new QLineEdit(o.maxError, this);
  m_maxError->setPlaceholderText("cosine>=0.999");
  form->addRow(tr("Accuracy gate"), m_maxError);
  m_backend = new QComboBox(this);
  m_backend->addItems({"cpu", "cuda"});
  m_backend->setCurrentText(o.backend);
  form->addRow(tr("Backend"), m_backend);
  for (auto [edit, label, value] : {std::tuple{&m_min, tr("Min shapes"), o.minShapes},
                                    std::tuple{&m_opt, tr("Opt shapes"), o.optShapes},
                                    std::tuple{&m_max, tr("Max shapes"), o.maxShapes}}) {
    *edit = new QLineEdit(value, this);
    (*edit)->setPlaceholderText("input:1x3x224x224");
    form->addRow(label, *edit);
  }
  m_data = addPath(form, tr("Accuracy data"), true);
  m_data->setText(o.accuracyData);
  m_cache = addPath(form, tr("INT8 calibration cache"), false);
  m_cache->setText(o.calibCache);
  m_calibData = addPath(form, tr("or calibration data"), true);
  m_calibData->setText(o.calibData);
  m_iterations = new QSpinBox(this);
  m_iterations->setRange(1, 100000);
  m_iterations->setValue(o.iterations);
  form->addRow(tr("Timed runs"), m_iterations);
  m_dir = addPath(form, tr("Sweep folder"), true);
  m_dir->setText(o.dir);
  m_dir->setPlaceholderText(tr("MODEL.sweep beside the model"));
  m_jobs = new QSpinBox(this);
  m_jobs->setRange(1, 64);
  m_jobs->setValue(o.jobs);
  form->addRow(tr("Configurations at once"), m_jobs);
  m_resume = new QCheckBox(tr("Continue the log (--continue)"), this);
  m_resume->setChecked(o.resume);
  m_retry = new QCheckBox(tr("Run failed ones again (--retry-failed)"), this);
  m_retry->setChecked(o.retryFailed);
  form->addRow(QString(), m_resume);
  form->addRow(QString(), m_retry);

  m_slurm = new QGroupBox(tr("Submit as a Slurm job array (--slurm)"), this);
  m_slurm->setCheckable(true);
  m_slurm->setChecked(o.slurm);
  auto* slurm = new QFormLayout(m_slurm);
  m_partition = new QLineEdit(o.partition, this);
  m_gres = new QLineEdit(o.gres, this);
  m_gres->setPlaceholderText("gpu:1");
  m_time = new QLineEdit(o.time, this);
  m_time->setPlaceholderText("00:30:00");
  m_arrayMax = new QSpinBox(this);
  m_arrayMax->setRange(0, 10000);
  m_arrayMax->setSpecialValueText(tr("no limit"));
  m_arrayMax->setValue(o.arrayMax);
  slurm->addRow(tr("Partition"), m_partition);
  slurm->addRow(tr("GRES"), m_gres);
  slurm->addRow(tr("Time limit"), m_time);
  slurm->addRow(tr("Tasks at once"), m_arrayMax);

  m_command = new QLineEdit(this);
  m_command->setReadOnly(true);
  m_command->setObjectName("sweepCommand");
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Start Sweep"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(m_slurm);
  layout->addWidget(m_command);
  layout->addWidget(buttons);
  for (QLineEdit* edit : findChildren<QLineEdit*>())
    if (edit != m_command)
      connect(edit, &QLineEdit::textChanged, this, &SweepDialog::updateCommand);
  for (QSpinBox* spin : findChildren<QSpinBox*>())
    connect(spin, &QSpinBox::valueChanged, this, &SweepDialog::updateCommand);
  connect(m_axes, &QPlainTextEdit::textChanged, this, &SweepDialog::updateCommand);
  connect(m_backend, &QComboBox::currentTextChanged, this, &SweepDialog::updateCommand);
  for (QCheckBox* box : {m_resume, m_retry})
    connect(box, &QCheckBox::toggled, this, &SweepDialog::updateCommand);
  connect(m_slurm, &QGroupBox::toggled, this, &SweepDialog::updateCommand);
  updateCommand();
}

QLineEdit* SweepDialog::addPath(QFormLayout* form, const QString& label, bool folder) {
  auto* edit = new QLineEdit(this);
  auto* browse = new QPushButton(tr("…"), this);
  browse->setFixedWidth(32);
  connect(browse, &QPushButton::clicked, this, [this, edit, label, folder] {
    const QString path = folder ? QFileDialog::getExistingDirectory(this, label, edit->text())
                                : QFileDialog::getOpenFileName(this, label, edit->text());
    if (!path.isEmpty()) edit->setText(path);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(edit, 1);
  row->addWidget(browse);
  form->addRow(label, row);
  return edit;
}

SweepOptions SweepDialog::options() const {
  SweepOptions o;
  o.model = m_model->text().trimmed();
  o.axes = m_axes->toPlainText().split('\n', Qt::SkipEmptyParts);
  o.maxError = m_maxError->text();
  o.backend = m_backend->currentText();
  o.minShapes = m_min->text(), o.optShapes = m_opt->text(), o.maxShapes = m_max->text();
  o.accuracyData = m_data->text(), o.calibCache = m_cache->text(),
  o.calibData = m_calibData->text();
  o.iterations = m_iterations->value();
  o.dir = m_dir->text().trimmed();
  o.jobs = m_jobs->value();
  o.resume = m_resume->isChecked(), o.retryFailed = m_retry->isChecked();
  o.slurm = m_slurm->isChecked();
  o.partition = m_partition->text(), o.gres = m_gres->text(), o.time = m_time->text();
  o.arrayMax = m_arrayMax->value();
  return o;
}

QString SweepDialog::commandLine() const {
  return m_command->text();
}

void SweepDialog::updateCommand() {
  std::vector<std::string> argv{"kiln"};
  for (const QString& a : sweepArguments(options())) argv.push_back(a.toStdString());
  m_command->setText(QString::fromStdString(kiln::sweep::shellJoin(argv)));
  m_command->setCursorPosition(0);
}

}  // namespace kiln::studio
