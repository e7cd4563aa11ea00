// CalibrationSession: the state of the studio's calibration workspace, without
// widgets: the data folder and its preprocessing, decoded sample previews, the
// histograms of a calibration run, the range table (each method's range, hand edits
// and pins), the cache file, and the INT8 rebuild. Slow steps (loading, calibrating,
// building) run through the JobRunner; results arrive as signals on the GUI thread.
// Mirrors `kiln calibrate` and `kiln build --int8 --calib-cache`.
#pragma once

#include <QImage>
#include <QObject>
#include <QString>
#include <QVector>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/calibration.h"
#include "kiln/calibration_data.h"

namespace kiln::studio {

class JobRunner;
class StudioDocument;
class TargetList;

// One row of the range table.
struct TensorRangeRow {
  std::string tensor;
  double minValue = 0, maxValue = 0;
  double entropy = 0, minmax = 0, percentile = 0;  // each method's amax
  TensorRange chosen;                              // what the cache holds
  bool edited = false;                             // set by hand: a method change keeps it
};

class CalibrationSession : public QObject {
  Q_OBJECT
 public:
  CalibrationSession(StudioDocument* document, JobRunner* jobs, QObject* parent = nullptr);

  // Data: a folder of .npy/.pb tensors or images (.png, .jpg, .bmp, .ppm, .pgm; QImage
  // decodes them) preprocessed by `spec`. Loads in the background; dataLoaded follows.
  void loadFolder(const QString& directory, const PreprocessSpec& spec, int batchSize);
  QString folder() const { return m_folder; }
  const PreprocessSpec& preprocess() const { return m_spec; }
  int sampleCount() const {
    return static_cast<int>(m_inputSamples.empty() ? m_samples.size()
                                                   : m_inputSamples.front().samples.size());
  }
  // Up to 6 samples as images (a tensor sample shows its first three channels).
  const QVector<QImage>& previews() const { return m_previews; }

  // Calibrates the open model on the loaded data in the background: on the GPU when
  // one is usable, else on the CPU reference (cuda::calibrateOnBackend's default).
  void calibrate();
  // With a remote target chosen in `targets` (null: always here), calibrate() runs `kiln
  // calibrate` on it through `kiln --remote` (calibration_session_remote.cpp): the cache
  // comes back and fills the range table (no histograms); failures name the host.
  void setTargets(TargetList* targets);
  bool running() const { return m_job >= 0; }
  void cancel();

  CalibrationMethod method() const { return m_method; }
  double percentile() const { return m_percentile; }
  // Picks every row's range from its histogram again, except rows edited by hand.
  void setMethod(CalibrationMethod method, double percentile);

  const std::vector<TensorRangeRow>& rows() const { return m_rows; }
  const TensorHistogram* histogram(const std::string& tensor) const;
  // Hand edits of row `row`: a positive range, or a pin (kFloat32/kFloat16;
  // kUndefined unpins). False when the value is not allowed.
  bool setRange(int row, double amax);
  bool setPin(int row, DataType pin);

  // The table the cache holds (rows as edited).
  CalibrationTable table() const;
  Status saveCache(const QString& path) const;
  // Loads a cache: its ranges and pins replace the rows' chosen values (rows the
  // histograms do not know are added without a histogram).
  Status loadCache(const QString& path);

  // Builds the open model in INT8 with the Build panel's configuration and this
  // table; the plan becomes the document's engine (rebuilt signal).
  void rebuild(const QString& backend = "cpu");

 signals:
  void dataLoaded(bool ok, const QString& message);
  void calibrated(bool ok, const QString& message);
  void rangesChanged();  // rows, method, edits, a loaded cache
  void rebuilt(bool ok, const QString& message);
  void busyChanged(bool busy);

 private:
  void setRows(const CalibrationHistograms& histograms);
  void fail(const QString& source, const QString& message);
  bool calibrateRemotely();  // starts a remote calibration when a target is chosen

  StudioDocument* m_document;
  JobRunner* m_jobs;
  QString m_folder;
  PreprocessSpec m_spec;
  int m_batchSize = 8;
  std::vector<CalibrationSample> m_samples;
  // A model of several inputs: one subfolder per input (kiln/calibration_data.h's
  // hasSubfolderPerInput), each input's samples; empty otherwise.
  std::vector<InputSamples> m_inputSamples;
  QVector<QImage> m_previews;
  CalibrationHistograms m_histograms;
  std::vector<TensorRangeRow> m_rows;
  CalibrationMethod m_method = CalibrationMethod::kEntropy;
  double m_percentile = 99.99;
  int m_job = -1;
  TargetList* m_targets = nullptr;
};

// Decodes an image file with QImage into the engine's RGB form (the studio's
// ImageDecoder for calibration folders).
Result<RgbImage> decodeImageWithQt(const std::string& path);
// A sample tensor ([C,H,W] or [N,C,H,W], first sample) as a preview image: its first
// three channels (or one, gray) stretched to 0..255.
QImage previewOfTensor(const Tensor& sample);

}  // namespace kiln::studio
