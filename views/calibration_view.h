// CalibrationView: the studio's calibration workspace (a central tab). Choose a data
// folder and its preprocessing with a preview of decoded samples, calibrate on the
// CPU with progress and cancel, compare each tensor's histogram with the range every
// method picks, edit a range or pin a tensor to fp16/fp32 in the table, save or load
// the cache, and rebuild the engine in INT8. The state lives in CalibrationSession.
#pragma once

#include <QWidget>

#include "kiln/calibration_data.h"
#include "view.h"

class QComboBox;
class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QToolBar;

namespace kiln::studio {

class CalibrationSession;
class HistogramWidget;
class JobRunner;
class StudioDocument;

class CalibrationView : public QWidget, public View {
  Q_OBJECT
 public:
  CalibrationView(StudioDocument* document, JobRunner* jobs, QWidget* parent = nullptr);

  QString id() const override { return "calibration"; }
  QString title() const override { return tr("Calibration"); }
  QWidget* widget() override { return this; }

  CalibrationSession* session() { return m_session; }
  // Columns of the range table.
  enum Column { kTensor, kMin, kMax, kEntropy, kMinMax, kPercentile, kRange, kPin, kColumns };
  QTableWidget* rangeTable() { return m_table; }
  HistogramWidget* histogramWidget() { return m_histogram; }
  int previewCount() const;

  // The folder and preprocessing as the form shows them (also for tests).
  void setFolder(const QString& directory);
  void loadData();          // the Load button
  void startCalibration();  // the Calibrate button
  void buildInt8();         // the Build INT8 button

 private:
  QWidget* createDataForm();
  QWidget* createMethodRow();
  QWidget* createCacheRow();
  PreprocessSpec specFromForm() const;

  void refreshTable();
  void showHistogram(int row);
  void onCellChanged(int row, int column);
  void showPreviews();
  void setBusy(bool busy);
  void saveCache();
  void loadCache();

  StudioDocument* m_document;
  CalibrationSession* m_session;
  QLineEdit* m_folder = nullptr;
  QSpinBox* m_width = nullptr;
  QSpinBox* m_height = nullptr;
  QLineEdit* m_mean = nullptr;
  QLineEdit* m_std = nullptr;
  QComboBox* m_channels = nullptr;
  QComboBox* m_layout = nullptr;
  QSpinBox* m_batch = nullptr;
  QHBoxLayout* m_previews = nullptr;
  QComboBox* m_method = nullptr;
  QDoubleSpinBox* m_percentile = nullptr;
  QPushButton* m_calibrate = nullptr;
  QPushButton* m_cancel = nullptr;
  QPushButton* m_build = nullptr;
  QTableWidget* m_table = nullptr;
  HistogramWidget* m_histogram = nullptr;
  QLabel* m_status = nullptr;
  bool m_refreshing = false;
};

}  // namespace kiln::studio
