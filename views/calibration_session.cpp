#include "calibration_session.h"

#include <QFileInfo>
#include <QPointer>
#include <algorithm>
#include <cmath>

#include "build_job.h"
#include "kiln/cuda_calibration.h"
#include "kiln/file_io.h"
#include "job_runner.h"
#include "studio_document.h"

namespace kiln::studio {
namespace {

constexpr int kPreviewCount = 6;

const std::vector<std::string>& qtImageExtensions() {
  static const std::vector<std::string> extensions = {".png", ".jpg", ".jpeg", ".bmp"};
  return extensions;
}

// The open model's one input: its name and rank; an error names what is missing.
Result<std::pair<std::string, int>> calibratedInput(const Network* network) {
  if (!network) return invalidArgument("calibration: no model is open");
  std::vector<const ValueInfo*> inputs;
  for (const ValueInfo& in : network->graph.inputs)
    if (!network->graph.initializers.count(in.name)) inputs.push_back(&in);
  if (inputs.size() != 1 || !inputs.front()->hasShape)
    return invalidArgument("calibration data feeds one input of known rank; the model has " +
                           std::to_string(inputs.size()) +
                           " inputs: load a folder with one subfolder per input, named after it");
  return std::pair{inputs.front()->name, static_cast<int>(inputs.front()->shape.size())};
}

}  // namespace

Result<RgbImage> decodeImageWithQt(const std::string& path) {
  // Read as a regular file first: QImage would block on a FIFO and read a device.
  Result<std::string> bytes = readRegularFile(path, kMaxTextFileBytes);
  if (!bytes.isOk()) return bytes.status();
  QImage image = QImage::fromData(QByteArray::fromStdString(bytes.value()));
  if (image.isNull()) return parseError("image '" + path + "' cannot be decoded");
  image = image.convertToFormat(QImage::Format_RGB888);
  RgbImage out;
  out.width = image.width();
  out.height = image.height();
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  for (int y = 0; y < out.height; ++y)
    std::copy_n(image.constScanLine(y), out.width * 3, out.rgb.data() + size_t(y) * out.width * 3);
  return out;
}

QImage previewOfTensor(const Tensor& sample) {
  if (sample.type() != DataType::kFloat32 || sample.rank() < 3) return {};
  const int offset = sample.rank() == 4 ? 1 : 0;
  const int channels = static_cast<int>(sample.dim(offset));
  const int h = static_cast<int>(sample.dim(offset + 1)),
            w = static_cast<int>(sample.dim(offset + 2));
  const int shown = channels >= 3 ? 3 : 1;
  const float* data = sample.data<float>();
  const int64_t plane = int64_t(h) * w;
  float lo = data[0], hi = data[0];
  for (int64_t i = 0; i < shown * plane; ++i) {
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  const float span = hi > lo ? hi - lo : 1.f;
  QImage image(w, h, QImage::Format_RGB888);
  for (int y = 0; y < h; ++y) {
    uchar* line = image.scanLine(y);
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        const float v = data[(shown == 3 ? c : 0) * plane + int64_t(y) * w + x];
        line[x * 3 + c] = static_cast<uchar>(std::lround(255.f * (v - lo) / span));
      }
  }
  return image;
}

CalibrationSession::CalibrationSession(StudioDocument* document, JobRunner* jobs, QObject* parent)
    : QObject(parent), m_document(document), m_jobs(jobs) {}

void CalibrationSession::fail(const QString& source, const QString& message) {
  m_document->addIssue({IssueSeverity::kError, source, message, {}});
}

void CalibrationSession::loadFolder(const QString& directory, const PreprocessSpec& spec,
                                    int batchSize) {
  if (running()) return;
  m_spec = spec;
  m_batchSize = std::max(1, batchSize);
  m_document->clearIssues("calibration");
  struct Loaded {
    Result<std::vector<CalibrationSample>> samples = Status();
    std::vector<InputSamples> inputs;  // one subfolder per input
    QVector<QImage> previews;
  };
  auto loaded = std::make_shared<Loaded>();
  const std::string dir = directory.toStdString();
  // A model of several inputs reads one subfolder per input when the folder has them.
  std::vector<std::pair<std::string, int>> inputs;
  if (const auto network = m_document->network())
    for (const ValueInfo& in : network->graph.inputs)
      if (!network->graph.initializers.count(in.name))
        inputs.emplace_back(in.name, static_cast<int>(in.shape.size()));
  std::vector<std::string> names;
  for (const auto& in : inputs) names.push_back(in.first);
  const bool perInput = hasSubfolderPerInput(names, dir);
  QPointer<CalibrationSession> self(this);
  m_job = m_jobs->start(
      tr("Load calibration data %1").arg(QFileInfo(directory).fileName()),
      [loaded, dir, spec, inputs, perInput](JobContext&) {
        CalibrationDataOptions options;
        options.preprocess = &spec;
        options.decodeImage = &decodeImageWithQt;
        options.imageExtensions = qtImageExtensions();
        if (perInput) {
          for (const auto& [name, rank] : inputs) {
            const std::string folder = dir + "/" + name;
            auto samples = loadCalibrationFolder(folder, options);
            if (!samples.isOk()) {
              loaded->samples = samples.status();
              return;
            }
            loaded->inputs.push_back({name, rank, folder, std::move(samples.value())});
          }
          loaded->samples = loaded->inputs.front().samples;  // previews and counts
        } else {
          loaded->samples = loadCalibrationFolder(dir, options);
        }
        if (!loaded->samples.isOk()) return;
        for (size_t i = 0; i < loaded->samples->size() && i < kPreviewCount; ++i)
          loaded->previews.push_back(previewOfTensor(loaded->samples->at(i).tensor));
      },
      [self, loaded, directory](const JobContext& context) {
        if (!self) return;
        if (context.failed()) loaded->samples = internalError(context.failure().toStdString());
        self->m_job = -1;
        emit self->busyChanged(false);
        if (!loaded->samples.isOk()) {
          const QString message = QString::fromStdString(loaded->samples.status().message());
          self->fail("calibration", message);
          emit self->dataLoaded(false, message);
          return;
        }
        self->m_folder = directory;
        self->m_samples = std::move(loaded->samples.value());
        self->m_inputSamples = std::move(loaded->inputs);
        self->m_previews = loaded->previews;
        emit self->dataLoaded(true, self->m_inputSamples.empty()
                                        ? tr("%1 samples").arg(self->m_samples.size())
                                        : tr("%1 samples for each of %2 inputs")
                                              .arg(self->m_samples.size())
                                              .arg(self->m_inputSamples.size()));
      });
  emit busyChanged(true);
}

void CalibrationSession::calibrate() {
  if (running()) return;
  if (calibrateRemotely()) return;
  auto input = calibratedInput(m_document->network().get());
  Result<std::vector<std::map<std::string, Tensor>>> batches =
      !m_inputSamples.empty()
          ? makeMultiInputCalibrationBatches(m_inputSamples, m_batchSize)
      : input.isOk() ? makeCalibrationBatches(m_samples, input->first, input->second, m_batchSize)
                     : Result<std::vector<std::map<std::string, Tensor>>>(input.status());
  if (!batches.isOk() || m_samples.empty()) {
    const QString message = m_samples.empty() ? tr("calibration: load a data folder first")
                                              : QString::fromStdString(batches.status().message());
    fail("calibration", message);
    emit calibrated(false, message);
    return;
  }
  auto network = m_document->network();
  auto result = std::make_shared<Result<CalibrationResult>>(Status());
  const CalibrationMethod method = m_method;
  const double percentile = m_percentile;
  auto data = std::make_shared<std::vector<std::map<std::string, Tensor>>>(std::move(*batches));
  QPointer<CalibrationSession> self(this);
  m_job = m_jobs->start(
      tr("Calibrate"),
      [network, data, result, method, percentile](JobContext& context) {
        CalibrationOptions options;
        options.method = method;
        options.percentile = percentile;
        options.cancel = context.cancelFlag();
        options.onProgress = [&context](const CalibrationProgress& p) {
          context.progress(double(p.batchesDone) / p.batchesTotal,
                           QObject::tr("batch %1 of %2").arg(p.batchesDone).arg(p.batchesTotal));
        };
        // The GPU when one is usable, as `kiln calibrate` does by default.
        *result =
            cuda::calibrateOnBackend(*network, *data, options, cuda::CalibrationBackend::kDefault);
      },
      [self, result](const JobContext& context) {
        if (!self) return;
        if (context.failed()) *result = internalError(context.failure().toStdString());
        self->m_job = -1;
        emit self->busyChanged(false);
        if (!result->isOk()) {
          const QString message = QString::fromStdString(result->status().message());
          if (result->status().code() != StatusCode::kCancelled) self->fail("calibration", message);
          emit self->calibrated(false, message);
          return;
        }
        const CalibrationResult& done = result->value();
        if (!done.fallback.empty())
          self->m_document->addIssue(
              {IssueSeverity::kWarning, "calibration", QString::fromStdString(done.fallback), {}});
        self->m_histograms = std::move(result->value().histograms);
        self->setRows(self->m_histograms);
        emit self->calibrated(true, tr("%1 tensors calibrated on %2 in %3 s")
                                        .arg(self->m_rows.size())
                                        .arg(QString::fromStdString(done.backend))
                                        .arg(done.seconds, 0, 'f', 2));
      });
  emit busyChanged(true);
}

void CalibrationSession::cancel() {
  if (running()) m_jobs->cancel(m_job);
}

void CalibrationSession::setRows(const CalibrationHistograms& histograms) {
  m_rows.clear();
  for (const auto& [name, h] : histograms) {
    TensorRangeRow row;
    row.tensor = name;
    row.minValue = h.minValue();
    row.maxValue = h.maxValue();
    row.entropy = h.amax(CalibrationMethod::kEntropy);
    row.minmax = h.amax(CalibrationMethod::kMinMax);
    row.percentile = h.amax(CalibrationMethod::kPercentile, m_percentile);
    m_rows.push_back(row);
  }
  setMethod(m_method, m_percentile);
}

void CalibrationSession::setMethod(CalibrationMethod method, double percentile) {
  m_method = method;
  const bool percentileChanged = percentile != m_percentile;
  m_percentile = percentile;
  for (TensorRangeRow& row : m_rows) {
    const TensorHistogram* h = histogram(row.tensor);
    if (h && percentileChanged)
      row.percentile = h->amax(CalibrationMethod::kPercentile, percentile);
    if (row.edited || !h) continue;
    row.chosen = {};
    row.chosen.amax = method == CalibrationMethod::kEntropy  ? row.entropy
                      : method == CalibrationMethod::kMinMax ? row.minmax
                                                             : row.percentile;
  }
  emit rangesChanged();
}

const TensorHistogram* CalibrationSession::histogram(const std::string& tensor) const {
  auto it = m_histograms.find(tensor);
  return it == m_histograms.end() ? nullptr : &it->second;
}

bool CalibrationSession::setRange(int row, double amax) {
  if (row < 0 || row >= int(m_rows.size()) || !(amax > 0) || !std::isfinite(amax)) return false;
  m_rows[row].chosen = {};
  m_rows[row].chosen.amax = amax;
  m_rows[row].edited = true;
  emit rangesChanged();
  return true;
}

bool CalibrationSession::setPin(int row, DataType pin) {
  if (row < 0 || row >= int(m_rows.size())) return false;
  if (pin != DataType::kUndefined && pin != DataType::kFloat32 && pin != DataType::kFloat16)
    return false;
  m_rows[row].chosen.pinned = pin;
  m_rows[row].edited = true;
  emit rangesChanged();
  return true;
}

CalibrationTable CalibrationSession::table() const {
  CalibrationTable table;
  table.method = calibrationMethodName(m_method);
  table.samples = sampleCount();
  for (const TensorRangeRow& row : m_rows) table.tensors[row.tensor] = row.chosen;
  return table;
}

Status CalibrationSession::saveCache(const QString& path) const {
  CalibrationTable out = table();
  if (!m_folder.isEmpty()) {
    const QString spec = path + ".preprocess";
    KILN_RETURN_IF_ERROR(savePreprocessSpec(m_spec, spec.toStdString()));
    out.preprocessingFile = QFileInfo(spec).fileName().toStdString();
  }
  return saveCalibrationCache(out, path.toStdString());
}

Status CalibrationSession::loadCache(const QString& path) {
  KILN_ASSIGN_OR_RETURN(CalibrationTable loaded, loadCalibrationCache(path.toStdString()));
  for (const auto& [name, range] : loaded.tensors) {
    auto it = std::find_if(m_rows.begin(), m_rows.end(),
                           [&](const TensorRangeRow& r) { return r.tensor == name; });
    if (it == m_rows.end()) {
      m_rows.push_back({});
      it = m_rows.end() - 1;
      it->tensor = name;
    }
    it->chosen = range;
    it->edited = true;
  }
  std::sort(m_rows.begin(), m_rows.end(),
            [](const TensorRangeRow& a, const TensorRangeRow& b) { return a.tensor < b.tensor; });
  emit rangesChanged();
  return Status::ok();
}

void CalibrationSession::rebuild(const QString& backend) {
  if (running()) return;
  if (!m_document->network() || m_rows.empty()) {
    const QString message = tr("INT8 build: calibrate or load a cache first");
    fail("calibration", message);
    emit rebuilt(false, message);
    return;
  }
  auto table = std::make_shared<const CalibrationTable>(this->table());
  BuildRequest request;
  request.network = m_document->network();
  request.config = m_document->buildConfig();
  request.config.int8 = true;
  request.config.calibration = table.get();
  request.backend = backend.toStdString();
  request.title = QFileInfo(m_document->modelPath()).fileName().toStdString() + " (INT8)";
  auto outcome = std::make_shared<BuildOutcome>();
  QPointer<CalibrationSession> self(this);
  m_job = m_jobs->start(
      tr("Build %1").arg(QString::fromStdString(request.title)),
      [request, table, outcome](JobContext& context) { *outcome = runBuildJob(request, context); },
      [self, outcome](const JobContext& context) {
        if (!self) return;
        self->m_job = -1;
        emit self->busyChanged(false);
        if (context.failed() || !outcome->status.isOk() || !outcome->plan) {
          const QString message = context.failed() ? context.failure()
                                  : outcome->status.isOk()
                                      ? tr("the build returned no plan")
                                      : QString::fromStdString(outcome->status.message());
          self->fail("calibration", message);
          emit self->rebuilt(false, message);
          return;
        }
        self->m_document->setEngine(QString(), outcome->plan, outcome->report);
        emit self->rebuilt(true,
                           tr("INT8 engine: %1 layers").arg(outcome->plan->record.layers.size()));
      });
  emit busyChanged(true);
}

}  // namespace kiln::studio
