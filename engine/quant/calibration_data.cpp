// Calibration data folders: listing and reading sample files, and concatenating
// samples into batches for one network input.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "kiln/calibration_data.h"
#include "kiln/tensor_io.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string lowerExtension(const fs::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// Notes a data folder may carry besides its samples.
bool isSkipped(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string ext = lowerExtension(path);
  return name.empty() || name[0] == '.' || ext == ".preprocess" || ext == ".txt" ||
         ext == ".cache" || ext == ".json" || ext == ".md";
}

Result<Tensor> readSample(const fs::path& path, const CalibrationDataOptions& options) {
  const std::string ext = lowerExtension(path);
  const std::string file = path.string();
  if (ext == ".npy" || ext == ".pb") return readTensorFile(file);
  const bool engineImage = ext == ".ppm" || ext == ".pgm";
  const bool callerImage = options.decodeImage &&
                           std::find(options.imageExtensions.begin(), options.imageExtensions.end(),
                                     ext) != options.imageExtensions.end();
  if (!engineImage && !callerImage)
    return invalidArgument("calibration file '" + file + "': unsupported type '" + ext +
                           "' (expected .npy, .pb, .ppm or .pgm" +
                           (options.imageExtensions.empty() ? "" : " or a decodable image") + ")");
  if (!options.preprocess)
    return invalidArgument("calibration file '" + file +
                           "' is an image: images need a preprocessing spec (--preprocess)");
  Result<RgbImage> image = engineImage ? decodePnm(file) : options.decodeImage(file);
  if (!image.isOk()) return image.status();
  return preprocessImage(*image, *options.preprocess);
}

}  // namespace

Result<std::vector<CalibrationSample>> loadCalibrationFolder(
    const std::string& directory, const CalibrationDataOptions& options) {
  std::error_code error;
  if (!fs::is_directory(directory, error))
    return notFound("calibration data '" + directory + "' is not a folder");
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, error)) {
    if (entry.is_regular_file(error) && !isSkipped(entry.path())) files.push_back(entry.path());
  }
  if (error) return invalidArgument("cannot list calibration data '" + directory + "'");
  std::sort(files.begin(), files.end());
  if (files.empty())
    return invalidArgument("calibration data '" + directory +
                           "' holds no samples (.npy, .pb, .ppm, .pgm)");
  std::vector<CalibrationSample> samples;
  for (const fs::path& path : files) {
    Result<Tensor> tensor = readSample(path, options);
    if (!tensor.isOk()) return tensor.status();
    if (!samples.empty()) {
      const Tensor& first = samples.front().tensor;
      if (tensor->type() != first.type())
        return invalidArgument("calibration file '" + path.string() + "' holds " +
                               dataTypeName(tensor->type()) + " but '" + samples.front().file +
                               "' holds " + dataTypeName(first.type()));
    }
    samples.push_back({path.string(), std::move(*tensor)});
  }
  return samples;
}

Result<std::vector<std::map<std::string, Tensor>>> makeCalibrationBatches(
    const std::vector<CalibrationSample>& samples, const std::string& inputName, int inputRank,
    int batchSize) {
  if (batchSize <= 0)
    return invalidArgument("calibration batch size " + std::to_string(batchSize) +
                           " must be positive");
  // Every sample as [n, ...] with the input's rank.
  std::vector<Tensor> batched;
  for (const CalibrationSample& s : samples) {
    if (s.tensor.rank() == inputRank) {
      batched.push_back(s.tensor);
    } else if (s.tensor.rank() + 1 == inputRank) {
      Shape shape = s.tensor.shape();
      shape.insert(shape.begin(), 1);
      batched.push_back(s.tensor.reshaped(shape));
    } else {
      return invalidArgument("calibration file '" + s.file + "' has shape " +
                             shapeToString(s.tensor.shape()) + "; input '" + inputName +
                             "' has rank " + std::to_string(inputRank) +
                             " (a sample may omit the batch dim)");
    }
    const Shape& first = batched.front().shape();
    if (!std::equal(first.begin() + 1, first.end(), batched.back().shape().begin() + 1,
                    batched.back().shape().end()))
      return invalidArgument("calibration file '" + s.file + "' has shape " +
                             shapeToString(s.tensor.shape()) + ", unlike '" + samples.front().file +
                             "' (" + shapeToString(samples.front().tensor.shape()) + ")");
  }
  std::vector<std::map<std::string, Tensor>> batches;
  for (size_t start = 0; start < batched.size();) {
    int64_t rows = 0;
    size_t end = start;
    while (end < batched.size() && (rows == 0 || rows + batched[end].dim(0) <= batchSize))
      rows += batched[end++].dim(0);
    Shape shape = batched[start].shape();
    shape[0] = rows;
    Tensor batch(batched[start].type(), shape);
    auto* dst = static_cast<unsigned char*>(batch.rawData());
    for (size_t i = start; i < end; ++i) {
      std::memcpy(dst, batched[i].rawData(), batched[i].byteSize());
      dst += batched[i].byteSize();
    }
    batches.push_back({{inputName, std::move(batch)}});
    start = end;
  }
  return batches;
}

bool hasSubfolderPerInput(const std::vector<std::string>& inputNames,
                          const std::string& directory) {
  if (inputNames.size() < 2) return false;
  std::error_code ec;
  for (const std::string& name : inputNames)
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
        !std::filesystem::is_directory(std::filesystem::path(directory) / name, ec))
      return false;
  return true;
}

Result<std::vector<std::map<std::string, Tensor>>> makeMultiInputCalibrationBatches(
    const std::vector<InputSamples>& inputs, int batchSize) {
  std::vector<std::map<std::string, Tensor>> merged;
  for (const InputSamples& in : inputs) {
    KILN_ASSIGN_OR_RETURN(auto batches,
                          makeCalibrationBatches(in.samples, in.input, in.rank, batchSize));
    if (&in == &inputs.front()) {
      merged = std::move(batches);
      continue;
    }
    if (batches.size() != merged.size())
      return invalidArgument(in.folder + ": " + std::to_string(batches.size()) +
                             " batches of samples, unlike the first input's " +
                             std::to_string(merged.size()) + " (give each input as many samples)");
    for (size_t b = 0; b < batches.size(); ++b) {
      Tensor& t = batches[b].begin()->second;
      const Tensor& first = merged[b].begin()->second;
      if (t.dim(0) != first.dim(0))
        return invalidArgument(in.folder + ": batch " + std::to_string(b) + " has " +
                               std::to_string(t.dim(0)) + " rows, unlike the first input's " +
                               std::to_string(first.dim(0)));
      merged[b].emplace(in.input, std::move(t));
    }
  }
  return merged;
}

}  // namespace kiln
