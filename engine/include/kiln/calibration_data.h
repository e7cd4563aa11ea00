// Calibration data: a folder of samples for one network input, batched. Tensors come
// from .npy files or ONNX TensorProto .pb files; images are decoded (binary PPM/PGM
// here, any format a caller's decoder reads, e.g. the studio's QImage), resized,
// normalized and laid out by a PreprocessSpec, the small text file saved with a cache.
//
// Preprocessing spec file (text, "key value" lines, '#' comments):
//   kiln-preprocess 1
//   size 224 224              (width height the image is resized to, bilinear)
//   scale 0.00392157          (pixel bytes times this first: 1/255 by default)
//   mean 0.485 0.456 0.406    (then (x - mean[c]) / std[c], per channel in the order below)
//   std 0.229 0.224 0.225
//   channels rgb              (rgb | bgr | gray)
//   layout nchw               (nchw | nhwc)
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct PreprocessSpec {
  int width = 224, height = 224;
  float scale = 1.0f / 255.0f;
  std::array<float, 3> mean = {0, 0, 0};
  std::array<float, 3> std = {1, 1, 1};
  enum class Channels { kRgb, kBgr, kGray } channels = Channels::kRgb;
  bool nhwc = false;
};
Result<PreprocessSpec> parsePreprocessSpec(const std::string& text, const std::string& displayName);
Result<PreprocessSpec> loadPreprocessSpec(const std::string& path);
std::string formatPreprocessSpec(const PreprocessSpec& spec);
Status savePreprocessSpec(const PreprocessSpec& spec, const std::string& path);

// An 8-bit RGB image, rows top to bottom, 3 bytes a pixel.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};
// Binary PPM (P6, RGB) or PGM (P5, gray, replicated to RGB), maxval <= 255.
Result<RgbImage> decodePnm(const std::string& path);
// One sample [C, H, W] (or [H, W, C] for nhwc) as float32, C = 3 (1 for gray).
Tensor preprocessImage(const RgbImage& image, const PreprocessSpec& spec);

// Decodes image files the engine cannot (returns kUnsupported for formats it does
// not know either); the studio passes a QImage-based one.
using ImageDecoder = std::function<Result<RgbImage>(const std::string& path)>;

struct CalibrationDataOptions {
  const PreprocessSpec* preprocess = nullptr;  // needed when the folder holds images
  ImageDecoder decodeImage;                    // for extensions besides .ppm/.pgm
  // Image file extensions (lower case, with the dot) `decodeImage` reads.
  std::vector<std::string> imageExtensions;
};

// One file of the folder: a sample without the batch dim, or a batch of samples.
struct CalibrationSample {
  std::string file;
  Tensor tensor;
};

// Reads every sample file of `directory` in name order (hidden files, *.preprocess
// and *.txt/*.cache/*.json notes are skipped). Errors name the folder or file: not a
// folder, no samples, unreadable or malformed file, a file of an unknown type,
// images without a preprocessing spec, samples of different shapes or types.
Result<std::vector<CalibrationSample>> loadCalibrationFolder(const std::string& directory,
                                                             const CalibrationDataOptions& options);

// Batches for the network input `inputName` of rank `inputRank`: a sample of rank
// inputRank - 1 gains a batch dim; samples are concatenated along dim 0, `batchSize`
// at a time (the last batch may be smaller). Errors: a sample whose rank fits
// neither, a non-positive batch size.
Result<std::vector<std::map<std::string, Tensor>>> makeCalibrationBatches(
    const std::vector<CalibrationSample>& samples, const std::string& inputName, int inputRank,
    int batchSize);

// A model of several inputs calibrates from one subfolder per input, named after it
// (DIR/input_ids/, DIR/attention_mask/ ...): the k-th sample of each (name order) belong
// together. True when `directory` holds a subfolder for each of `inputNames` (two or more).
bool hasSubfolderPerInput(const std::vector<std::string>& inputNames, const std::string& directory);

// One input's samples, read from its subfolder.
struct InputSamples {
  std::string input;
  int rank = 0;        // the input's rank (samples may omit the batch dim)
  std::string folder;  // where they came from, for errors
  std::vector<CalibrationSample> samples;
};

// Each input's samples batched as makeCalibrationBatches does, then merged into one map
// per batch. Errors name the folder: an input with a different number of batches or
// rows per batch than the first (give each input as many samples of as many rows).
Result<std::vector<std::map<std::string, Tensor>>> makeMultiInputCalibrationBatches(
    const std::vector<InputSamples>& inputs, int batchSize);

}  // namespace kiln
