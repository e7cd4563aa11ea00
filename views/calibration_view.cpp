#include "calibration_view.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "calibration_session.h"
#include "histogram_widget.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

// "0.485, 0.456, 0.406" -> three floats; false unless exactly three numbers.
bool parseTriple(const QString& text, std::array<float, 3>* out) {
  const QStringList parts = text.split(',', Qt::SkipEmptyParts);
  if (parts.size() != 3) return false;
  for (int i = 0; i < 3; ++i) {
    bool ok = false;
    (*out)[i] = parts[i].trimmed().toFloat(&ok);
    if (!ok) return false;
  }
  return true;
}

constexpr int kControlsMinHeight = 90;  // the scroll area keeps a row or two visible
constexpr int kTableMinWidth = 360;     // the name and three numbers at least
constexpr int kTensorColumnMaxWidth = 200;

QString number(double v) {
  return QString::number(v, 'g', 5);
}

QString pinText(DataType pin) {
  return pin == DataType::kFloat16 ? "fp16" : pin == DataType::kFloat32 ? "fp32" : "";
}

}  // namespace

CalibrationView::CalibrationView(StudioDocument* document, JobRunner* jobs, QWidget* parent)
    : QWidget(parent),
      m_document(document),
      m_session(new CalibrationSession(document, jobs, this)) {
  // The data form scrolls above the ranges, the ranges table and the histogram share a
  // splitter, and the method row with Calibrate stays in sight below them: on a
  // 1366 x 768 screen the table kept only its name column and the view forced the
  // window taller.
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(createDataForm());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumHeight(kControlsMinHeight);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->setObjectName("rangesSplit");
  m_table = new QTableWidget(0, kColumns, split);
  m_table->setHorizontalHeaderLabels({tr("tensor"), tr("min"), tr("max"), tr("entropy"),
                                      tr("min-max"), tr("percentile"), tr("range (edit)"),
                                      tr("pin (fp16/fp32)")});
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setSectionResizeMode(kTensor, QHeaderView::Interactive);
  m_table->setTextElideMode(Qt::ElideMiddle);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setMinimumWidth(kTableMinWidth);
  m_histogram = new HistogramWidget(split);
  split->addWidget(m_table);
  split->addWidget(m_histogram);
  split->setChildrenCollapsible(false);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* vertical = new QSplitter(Qt::Vertical, this);
  vertical->setObjectName("calibrationSplit");
  vertical->addWidget(scroll);
  vertical->addWidget(split);
  vertical->setChildrenCollapsible(false);
  vertical->setStretchFactor(0, 0);
  vertical->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(vertical, 1);
  layout->addWidget(createMethodRow());
  layout->addWidget(createCacheRow());

  connect(m_table, &QTableWidget::cellChanged, this, &CalibrationView::onCellChanged);
  connect(m_table, &QTableWidget::currentCellChanged, this,
          [this](int row, int, int, int) { showHistogram(row); });
  connect(m_session, &CalibrationSession::rangesChanged, this, &CalibrationView::refreshTable);
  connect(m_session, &CalibrationSession::busyChanged, this, &CalibrationView::setBusy);
  connect(m_session, &CalibrationSession::dataLoaded, this, [this](bool ok, const QString& text) {
    m_status->setText(ok ? tr("data: %1").arg(text) : text);
    showPreviews();
  });
  connect(m_session, &CalibrationSession::calibrated, this,
          [this](bool, const QString& text) { m_status->setText(text); });
  connect(m_session, &CalibrationSession::rebuilt, this,
          [this](bool, const QString& text) { m_status->setText(text); });
}

QWidget* CalibrationView::createDataForm() {
  auto* box = new QGroupBox(tr("Calibration data"), this);
  auto* form = new QFormLayout(box);
  auto* folderRow = new QHBoxLayout;
  m_folder = new QLineEdit(box);
  m_folder->setPlaceholderText(tr("folder of .npy/.pb tensors or images"));
  auto* browse = new QPushButton(tr("Browse…"), box);
  auto* load = new QPushButton(tr("Load"), box);
  folderRow->addWidget(m_folder, 1);
  folderRow->addWidget(browse);
  folderRow->addWidget(load);
  form->addRow(tr("Folder"), folderRow);
  auto* specRow = new QHBoxLayout;
  m_width = new QSpinBox(box);
  m_width->setObjectName("width");
  m_height = new QSpinBox(box);
  for (QSpinBox* s : {m_width, m_height}) {
    s->setRange(1, 16384);
    s->setValue(224);
    specRow->addWidget(s);
  }
  m_mean = new QLineEdit("0, 0, 0", box);
  m_std = new QLineEdit("1, 1, 1", box);
  m_channels = new QComboBox(box);
  m_channels->addItems({"rgb", "bgr", "gray"});
  m_layout = new QComboBox(box);
  m_layout->addItems({"nchw", "nhwc"});
  m_batch = new QSpinBox(box);
  m_batch->setRange(1, 4096);
  m_batch->setValue(8);
  auto* normalizeRow = new QHBoxLayout;
  normalizeRow->addWidget(new QLabel(tr("mean"), box));
  normalizeRow->addWidget(m_mean);
  normalizeRow->addWidget(new QLabel(tr("std"), box));
  normalizeRow->addWidget(m_std);
  specRow->addWidget(m_channels);
  specRow->addWidget(m_layout);
  specRow->addWidget(new QLabel(tr("batch"), box));
  specRow->addWidget(m_batch);
  specRow->addStretch(1);
  form->addRow(tr("Images: size, scale 1/255"), specRow);
  form->addRow(tr("Normalize"), normalizeRow);
  m_previews = new QHBoxLayout;
  m_previews->addStretch(1);
  form->addRow(tr("Samples"), m_previews);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Calibration data"));
    if (!dir.isEmpty()) setFolder(dir);
  });
  connect(load, &QPushButton::clicked, this, &CalibrationView::loadData);
  return box;
}

QWidget* CalibrationView::createMethodRow() {
  auto* row = new QWidget(this);
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  m_method = new QComboBox(row);
  m_method->setObjectName("method");
  m_method->addItems({"entropy", "minmax", "percentile"});
  m_percentile = new QDoubleSpinBox(row);
  m_percentile->setDecimals(4);
  m_percentile->setRange(50, 100);
  m_percentile->setValue(99.99);
  m_calibrate = new QPushButton(tr("Calibrate"), row);
  m_cancel = new QPushButton(tr("Cancel"), row);
  m_cancel->setEnabled(false);
  layout->addWidget(new QLabel(tr("Method"), row));
  layout->addWidget(m_method);
  layout->addWidget(new QLabel(tr("percentile"), row));
  layout->addWidget(m_percentile);
  layout->addWidget(m_calibrate);
  layout->addWidget(m_cancel);
  layout->addStretch(1);
  auto applyMethod = [this] {
    CalibrationMethod method = CalibrationMethod::kEntropy;
    parseCalibrationMethod(m_method->currentText().toStdString(), &method);
    m_session->setMethod(method, m_percentile->value());
  };
  connect(m_method, &QComboBox::currentIndexChanged, this, applyMethod);
  connect(m_percentile, &QDoubleSpinBox::valueChanged, this, applyMethod);
  connect(m_calibrate, &QPushButton::clicked, this, &CalibrationView::startCalibration);
  connect(m_cancel, &QPushButton::clicked, m_session, &CalibrationSession::cancel);
  return row;
}

QWidget* CalibrationView::createCacheRow() {
  auto* row = new QWidget(this);
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* save = new QPushButton(tr("Save cache…"), row);
  auto* load = new QPushButton(tr("Load cache…"), row);
  m_build = new QPushButton(tr("Build INT8"), row);
  m_status = new QLabel(tr("Open a model, load a data folder, then calibrate."), row);
  layout->addWidget(save);
  layout->addWidget(load);
  layout->addWidget(m_build);
  layout->addWidget(m_status, 1);
  connect(save, &QPushButton::clicked, this, &CalibrationView::saveCache);
  connect(load, &QPushButton::clicked, this, &CalibrationView::loadCache);
  connect(m_build, &QPushButton::clicked, this, &CalibrationView::buildInt8);
  return row;
}

PreprocessSpec CalibrationView::specFromForm() const {
  PreprocessSpec spec;
  spec.width = m_width->value();
  spec.height = m_height->value();
  parseTriple(m_mean->text(), &spec.mean);
  if (std::array<float, 3> s; parseTriple(m_std->text(), &s) && s[0] && s[1] && s[2]) spec.std = s;
  spec.channels = m_channels->currentText() == "bgr"    ? PreprocessSpec::Channels::kBgr
                  : m_channels->currentText() == "gray" ? PreprocessSpec::Channels::kGray
                                                        : PreprocessSpec::Channels::kRgb;
  spec.nhwc = m_layout->currentText() == "nhwc";
  return spec;
}

void CalibrationView::setFolder(const QString& directory) {
  m_folder->setText(directory);
}

void CalibrationView::loadData() {
  m_session->loadFolder(m_folder->text().trimmed(), specFromForm(), m_batch->value());
}

void CalibrationView::startCalibration() {
  m_session->calibrate();
}

void CalibrationView::buildInt8() {
  m_session->rebuild();
}

int CalibrationView::previewCount() const {
  return m_previews->count() - 1;  // the stretch
}

void CalibrationView::showPreviews() {
  while (m_previews->count() > 1) {
    QLayoutItem* item = m_previews->takeAt(0);
    delete item->widget();
    delete item;
  }
  for (const QImage& image : m_session->previews()) {
    if (image.isNull()) continue;  // a sample that is not an image (token ids, a vector)
    auto* label = new QLabel(this);
    label->setPixmap(QPixmap::fromImage(image.scaled(40, 40, Qt::KeepAspectRatio)));
    label->setToolTip(tr("%1 x %2").arg(image.width()).arg(image.height()));
    m_previews->insertWidget(m_previews->count() - 1, label);
  }
}

void CalibrationView::refreshTable() {
  m_refreshing = true;
  const auto& rows = m_session->rows();
  m_table->setRowCount(static_cast<int>(rows.size()));
  for (int r = 0; r < static_cast<int>(rows.size()); ++r) {
    const TensorRangeRow& row = rows[r];
    const QStringList cells = {QString::fromStdString(row.tensor),
                               number(row.minValue),
                               number(row.maxValue),
                               number(row.entropy),
                               number(row.minmax),
                               number(row.percentile),
                               number(row.chosen.amax),
                               pinText(row.chosen.pinned)};
    for (int c = 0; c < kColumns; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c != kRange && c != kPin) item->setFlags(item->flags() & ~Qt::ItemIsEditable);
      if (row.edited && (c == kRange || c == kPin)) item->setToolTip(tr("edited by hand"));
      if (c == kTensor) item->setToolTip(cells[c]);  // elided in the middle when long
      m_table->setItem(r, c, item);
    }
  }
  // Long tensor names must not push the numbers off screen.
  m_table->resizeColumnToContents(kTensor);
  if (m_table->columnWidth(kTensor) > kTensorColumnMaxWidth)
    m_table->setColumnWidth(kTensor, kTensorColumnMaxWidth);
  m_refreshing = false;
  showHistogram(m_table->currentRow() >= 0 ? m_table->currentRow() : 0);
}

void CalibrationView::onCellChanged(int row, int column) {
  if (m_refreshing) return;
  const QString text = m_table->item(row, column)->text().trimmed();
  bool accepted = false;
  if (column == kRange) {
    bool ok = false;
    const double value = text.toDouble(&ok);
    accepted = ok && m_session->setRange(row, value);
  } else if (column == kPin) {
    const DataType pin = text == "fp16"   ? DataType::kFloat16
                         : text == "fp32" ? DataType::kFloat32
                                          : DataType::kUndefined;
    accepted = (pin != DataType::kUndefined || text.isEmpty()) && m_session->setPin(row, pin);
  }
  if (!accepted) {
    m_status->setText(tr("'%1' is not a positive range or a pin (fp16, fp32, empty)").arg(text));
    refreshTable();
  }
}

void CalibrationView::showHistogram(int row) {
  const auto& rows = m_session->rows();
  if (row < 0 || row >= static_cast<int>(rows.size())) {
    m_histogram->setHistogram(QString(), nullptr, {});
    return;
  }
  const TensorRangeRow& r = rows[row];
  std::vector<HistogramMarker> markers = {{tr("entropy"), r.entropy, QColor(200, 60, 60)},
                                          {tr("min-max"), r.minmax, QColor(60, 140, 60)},
                                          {tr("percentile"), r.percentile, QColor(60, 90, 200)}};
  if (r.chosen.pinned == DataType::kUndefined)
    markers.push_back({tr("range"), r.chosen.amax, QColor(0, 0, 0)});
  m_histogram->setHistogram(QString::fromStdString(r.tensor), m_session->histogram(r.tensor),
                            std::move(markers));
}

void CalibrationView::setBusy(bool busy) {
  m_calibrate->setEnabled(!busy);
  m_build->setEnabled(!busy);
  m_cancel->setEnabled(busy);
}

void CalibrationView::saveCache() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save calibration cache"), QString(),
                                                    tr("Calibration cache (*.cache);;All (*)"));
  if (path.isEmpty()) return;
  Status saved = m_session->saveCache(path);
  m_status->setText(saved.isOk() ? tr("saved %1").arg(path)
                                 : QString::fromStdString(saved.message()));
}

void CalibrationView::loadCache() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Load calibration cache"), QString(),
                                                    tr("Calibration cache (*.cache);;All (*)"));
  if (path.isEmpty()) return;
  Status loaded = m_session->loadCache(path);
  if (!loaded.isOk())
    m_document->addIssue(
        {IssueSeverity::kError, "calibration", QString::fromStdString(loaded.message()), {}});
  m_status->setText(loaded.isOk() ? tr("loaded %1").arg(path)
                                  : QString::fromStdString(loaded.message()));
}

}  // namespace kiln::studio
