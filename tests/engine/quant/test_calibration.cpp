// Calibration: histograms and the three range methods on known distributions, the
// cache and preprocessing files (round trip and clear errors), calibration data
// folders, and a calibration of the small CNN fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "kiln/calibration.h"
#include "kiln/calibration_data.h"
#include "kiln/onnx_import.h"
#include "kiln/tensor_io.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const std::string kQuantDir = std::string(KILN_TEST_DATA_DIR) + "/quant";

// A fresh folder under the temp directory, removed with everything in it when the test's
// scope ends (a failed assertion included), so no run leaves one behind.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : m_path(fs::temp_directory_path() /
               ("kiln_quant_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(m_path);
    fs::create_directories(m_path);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(m_path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  operator std::string() const { return m_path.string(); }  // NOLINT: used as a path string

 private:
  fs::path m_path;
};

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Gaussian values (sigma 1) with a few far outliers at +-40.
std::vector<float> gaussianWithOutliers(int count) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = normal(rng);
  for (int i = 0; i < 5; ++i) v[static_cast<size_t>(i) * 1000] = i % 2 ? -40.f : 40.f;
  return v;
}

TEST(TensorHistogram, MinMaxIsTheLargestMagnitude) {
  TensorHistogram h;
  const std::vector<float> a = {0.5f, -3.25f, 1.f};
  const std::vector<float> b = {2.f, 0.f};
  h.add(a.data(), 3);
  h.add(b.data(), 2);
  EXPECT_EQ(h.count(), 5);
  EXPECT_DOUBLE_EQ(h.amax(CalibrationMethod::kMinMax), 3.25);
  EXPECT_DOUBLE_EQ(h.minValue(), -3.25);
  EXPECT_DOUBLE_EQ(h.maxValue(), 2.0);
  EXPECT_GT(h.range(), 3.25);
}

TEST(TensorHistogram, GrowingKeepsEveryCount) {
  TensorHistogram h;
  const std::vector<float> small = {0.001f, 0.002f, 0.003f};
  const std::vector<float> large = {1000.f, -999.f};
  h.add(small.data(), 3);
  const double firstRange = h.range();
  h.add(large.data(), 2);
  EXPECT_GT(h.range(), 1000.0);
  EXPECT_GT(h.range(), firstRange * 1000);
  double total = 0;
  for (double c : h.bins()) total += c;
  EXPECT_EQ(total, 5.0);
  EXPECT_EQ(h.bins().back(), 0.0);  // the range doubled past the largest value
}

TEST(TensorHistogram, PercentileAndEntropyClipOutliers) {
  const std::vector<float> v = gaussianWithOutliers(100000);
  TensorHistogram h;
  h.add(v.data(), static_cast<int64_t>(v.size()));
  const double minmax = h.amax(CalibrationMethod::kMinMax);
  const double p9999 = h.amax(CalibrationMethod::kPercentile, 99.99);
  const double p99 = h.amax(CalibrationMethod::kPercentile, 99.0);
  const double entropy = h.amax(CalibrationMethod::kEntropy);
  EXPECT_DOUBLE_EQ(minmax, 40.0);
  // |x| of a unit Gaussian: 99% below 2.576, 99.99% below 3.89.
  EXPECT_NEAR(p99, 2.576, 0.1);
  EXPECT_GT(p9999, 3.3);
  EXPECT_LT(p9999, 5.0);
  EXPECT_GT(entropy, 2.0);
  EXPECT_LT(entropy, 20.0);
}

TEST(TensorHistogram, NonFiniteValuesAreCountedApart) {
  TensorHistogram h;
  const std::vector<float> v = {NAN, 1.5f, INFINITY, 3.f};
  h.add(v.data(), 4);
  EXPECT_EQ(h.count(), 2);
  EXPECT_DOUBLE_EQ(h.minValue(), 1.5);  // the first finite value starts the extremes
  const std::vector<float> more = {-2.f};
  h.add(more.data(), 1);
  EXPECT_EQ(h.nonFinite(), 2);
  EXPECT_DOUBLE_EQ(h.amax(CalibrationMethod::kMinMax), 3.0);
  EXPECT_DOUBLE_EQ(h.minValue(), -2.0);
}

TEST(CalibrationCache, RoundTripsNamesRangesAndPins) {
  CalibrationTable table;
  table.method = "percentile 99.9";
  table.samples = 12;
  table.preprocessingFile = "model.preprocess";
  table.tensors["input"].amax = 2.5;
  table.tensors["name with spaces \"quoted\""].amax = 0.125;
  table.tensors["hash#name"].amax = 7;
  table.tensors["pinned"].pinned = DataType::kFloat16;
  const std::string text = formatCalibrationCache(table);
  auto parsed = parseCalibrationCache(text, "mem");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->method, "percentile 99.9");
  EXPECT_EQ(parsed->samples, 12);
  EXPECT_EQ(parsed->preprocessingFile, "model.preprocess");
  ASSERT_EQ(parsed->tensors.size(), 4u);
  EXPECT_DOUBLE_EQ(parsed->find("input")->amax, 2.5);
  EXPECT_DOUBLE_EQ(parsed->find("name with spaces \"quoted\"")->amax, 0.125);
  EXPECT_DOUBLE_EQ(parsed->find("hash#name")->amax, 7.0);
  EXPECT_EQ(parsed->find("pinned")->pinned, DataType::kFloat16);
  EXPECT_EQ(formatCalibrationCache(*parsed), text);
}

TEST(CalibrationCache, HandEditedTextParses) {
  auto parsed = parseCalibrationCache(
      "# my edits\nkiln-calibration 1\n\ntensor a 1.5   # widened by hand\ntensor b pin fp32\n",
      "edited.cache");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_DOUBLE_EQ(parsed->find("a")->amax, 1.5);
  EXPECT_DOUBLE_EQ(parsed->find("a")->scale(), 1.5 / 127);
  EXPECT_EQ(parsed->find("b")->pinned, DataType::kFloat32);
}

struct BadCache {
  const char* text;
  const char* message;
};

class CalibrationCacheErrors : public ::testing::TestWithParam<BadCache> {};

TEST_P(CalibrationCacheErrors, NameTheFileAndLine) {
  auto parsed = parseCalibrationCache(GetParam().text, "c.cache");
  ASSERT_FALSE(parsed.isOk());
  const std::string message = parsed.status().message();
  EXPECT_NE(message.find("calibration cache 'c.cache'"), std::string::npos) << message;
  EXPECT_NE(message.find(GetParam().message), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, CalibrationCacheErrors,
    ::testing::Values(BadCache{"", "empty file"},
                      BadCache{"TRT-8601-EntropyCalibration2\ninput: 3c010a14\n",
                               "not a calibration cache"},
                      BadCache{"kiln-calibration 2\ntensor a 1\n", "unsupported cache version"},
                      BadCache{"kiln-calibration 1\ntensor a -1\n",
                               "line 2: tensor 'a': range '-1' must be a positive"},
                      BadCache{"kiln-calibration 1\ntensor a nan\n", "positive finite"},
                      BadCache{"kiln-calibration 1\ntensor a pin int4\n", "fp16 or fp32"},
                      BadCache{"kiln-calibration 1\ntensor \"a 1\n", "unterminated"},
                      BadCache{"kiln-calibration 1\nscale a 1\n", "unknown entry 'scale'"},
                      BadCache{"kiln-calibration 1\nmethod entropy\n", "no tensor entries"}));

TEST(CalibrationCache, BinaryBytesAreRejected) {
  auto parsed = parseCalibrationCache(std::string("kiln-calibration 1\n\0\x01", 21), "c.cache");
  ASSERT_FALSE(parsed.isOk());
  EXPECT_NE(parsed.status().message().find("binary data"), std::string::npos);
}

TEST(CalibrationCache, MissingFileIsNamed) {
  auto loaded = loadCalibrationCache("/nonexistent/model.cache");
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find("/nonexistent/model.cache"), std::string::npos);
}

TEST(PreprocessSpec, RoundTripsAndRejectsBadEntries) {
  PreprocessSpec spec;
  spec.width = 32;
  spec.height = 24;
  spec.mean = {0.485f, 0.456f, 0.406f};
  spec.std = {0.229f, 0.224f, 0.225f};
  spec.channels = PreprocessSpec::Channels::kBgr;
  spec.nhwc = true;
  auto parsed = parsePreprocessSpec(formatPreprocessSpec(spec), "p");
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->width, 32);
  EXPECT_EQ(parsed->height, 24);
  EXPECT_FLOAT_EQ(parsed->std[2], 0.225f);
  EXPECT_EQ(parsed->channels, PreprocessSpec::Channels::kBgr);
  EXPECT_TRUE(parsed->nhwc);
  for (const char* bad : {"size 0 3", "std 1 0 1", "layout chw", "channels cmyk", "gamma 2"}) {
    auto r = parsePreprocessSpec(std::string("kiln-preprocess 1\n") + bad + "\n", "p.preprocess");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_NE(r.status().message().find("'p.preprocess' line 2"), std::string::npos)
        << r.status().message();
  }
}

TEST(CalibrationImages, PpmIsResizedNormalizedAndLaidOut) {
  const TempDir dirFolder("images");
  const std::string dir = dirFolder;
  // 2x2 RGB: red, green / blue, white.
  const std::string ppm = std::string("P6\n# test\n2 2\n255\n") +
                          std::string("\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff", 12);
  writeFile(dir + "/a.ppm", ppm);
  auto image = decodePnm(dir + "/a.ppm");
  ASSERT_TRUE(image.isOk()) << image.status().toString();
  PreprocessSpec spec;
  spec.width = 2;
  spec.height = 2;
  spec.mean = {0.5f, 0.5f, 0.5f};
  spec.std = {0.5f, 0.5f, 0.5f};
  Tensor chw = preprocessImage(*image, spec);
  ASSERT_EQ(chw.shape(), (Shape{3, 2, 2}));
  // Red plane: 1 at (0,0) and (1,1) -> (1 - 0.5) / 0.5 = 1; 0 elsewhere -> -1.
  EXPECT_FLOAT_EQ(chw.data<float>()[0], 1.f);
  EXPECT_FLOAT_EQ(chw.data<float>()[1], -1.f);
  EXPECT_FLOAT_EQ(chw.data<float>()[3], 1.f);
  spec.channels = PreprocessSpec::Channels::kBgr;
  spec.nhwc = true;
  Tensor hwc = preprocessImage(*image, spec);
  ASSERT_EQ(hwc.shape(), (Shape{2, 2, 3}));
  EXPECT_FLOAT_EQ(hwc.data<float>()[0], -1.f);  // pixel (0,0) blue channel first
  EXPECT_FLOAT_EQ(hwc.data<float>()[2], 1.f);   // then red
  writeFile(dir + "/b.ppm", "P6\n2 2\n255\nabc");
  auto truncated = decodePnm(dir + "/b.ppm");
  ASSERT_FALSE(truncated.isOk());
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);
}

TEST(CalibrationData, FolderOfNpyBatches) {
  auto samples = loadCalibrationFolder(kQuantDir + "/calib", {});
  ASSERT_TRUE(samples.isOk()) << samples.status().toString();
  ASSERT_EQ(samples->size(), 8u);
  auto batches = makeCalibrationBatches(*samples, "input", 4, 3);
  ASSERT_TRUE(batches.isOk()) << batches.status().toString();
  ASSERT_EQ(batches->size(), 3u);
  EXPECT_EQ(batches->at(0).at("input").shape(), (Shape{3, 3, 16, 16}));
  EXPECT_EQ(batches->at(2).at("input").shape(), (Shape{2, 3, 16, 16}));
  // Sample 3 is the first of batch 1.
  EXPECT_EQ(batches->at(1).at("input").data<float>()[5], samples->at(3).tensor.data<float>()[5]);
}

TEST(CalibrationData, BadFoldersGiveClearErrors) {
  auto missing = loadCalibrationFolder("/nonexistent/calib", {});
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("is not a folder"), std::string::npos);

  const TempDir emptyFolder("empty");
  const std::string empty = emptyFolder;
  writeFile(empty + "/notes.txt", "hello");
  auto none = loadCalibrationFolder(empty, {});
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("holds no samples"), std::string::npos);

  const TempDir corruptFolder("corrupt");
  const std::string corrupt = corruptFolder;
  writeFile(corrupt + "/x.npy", "\x93NUMPY garbage");
  auto bad = loadCalibrationFolder(corrupt, {});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("x.npy"), std::string::npos) << bad.status().message();

  const TempDir unknownFolder("unknown");
  const std::string unknown = unknownFolder;
  writeFile(unknown + "/x.jpg", "jpeg");
  auto jpg = loadCalibrationFolder(unknown, {});
  ASSERT_FALSE(jpg.isOk());
  EXPECT_NE(jpg.status().message().find("unsupported type '.jpg'"), std::string::npos);

  const TempDir imagesFolder("needspec");
  const std::string images = imagesFolder;
  writeFile(images + "/x.ppm", "P6\n1 1\n255\nabc");
  auto noSpec = loadCalibrationFolder(images, {});
  ASSERT_FALSE(noSpec.isOk());
  EXPECT_NE(noSpec.status().message().find("preprocessing spec"), std::string::npos);

  const TempDir mixedFolder("mixed");
  const std::string mixed = mixedFolder;
  ASSERT_TRUE(writeNpyFile(mixed + "/a.npy", Tensor(DataType::kFloat32, {3, 16, 16})).isOk());
  ASSERT_TRUE(writeNpyFile(mixed + "/b.npy", Tensor(DataType::kFloat32, {3, 8, 8})).isOk());
  auto samples = loadCalibrationFolder(mixed, {});
  ASSERT_TRUE(samples.isOk());
  auto batches = makeCalibrationBatches(*samples, "input", 4, 2);
  ASSERT_FALSE(batches.isOk());
  EXPECT_NE(batches.status().message().find("b.npy"), std::string::npos);
  auto wrongRank = makeCalibrationBatches(*samples, "input", 2, 2);
  ASSERT_FALSE(wrongRank.isOk());
  EXPECT_NE(wrongRank.status().message().find("rank 2"), std::string::npos);
}

TEST(Calibrator, SmallCnnRangesFollowTheActivations) {
  auto network = importOnnxFile(kQuantDir + "/small_cnn.onnx");
  ASSERT_TRUE(network.isOk()) << network.status().toString();
  auto samples = loadCalibrationFolder(kQuantDir + "/calib", {});
  ASSERT_TRUE(samples.isOk());
  auto batches = makeCalibrationBatches(*samples, "input", 4, 4);
  ASSERT_TRUE(batches.isOk());
  int progressCalls = 0;
  CalibrationOptions options;
  options.method = CalibrationMethod::kMinMax;
  options.onProgress = [&](const CalibrationProgress& p) {
    ++progressCalls;
    EXPECT_EQ(p.batchesTotal, 2);
  };
  auto result = calibrateNetwork(*network, *batches, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_EQ(progressCalls, 2);
  EXPECT_EQ(result->table.samples, 8);
  // Every float activation, the input and the logits included.
  for (const char* name : {"input", "c0", "r0", "p0", "r1", "a2", "r4", "f5", "logits"})
    ASSERT_NE(result->table.find(name), nullptr) << name;
  // Min-max of the input equals the data's own largest magnitude.
  double inputMax = 0;
  for (const CalibrationSample& s : *samples)
    for (int64_t i = 0; i < s.tensor.numel(); ++i)
      inputMax = std::max(inputMax, std::fabs(static_cast<double>(s.tensor.data<float>()[i])));
  EXPECT_DOUBLE_EQ(result->table.find("input")->amax, inputMax);
  // MaxPool keeps the largest Relu output: the same range.
  EXPECT_DOUBLE_EQ(result->table.find("p0")->amax, result->table.find("r0")->amax);
  EXPECT_GE(result->histograms.at("r0").minValue(), 0.0);

  std::atomic<bool> cancel{true};
  options.cancel = &cancel;
  auto cancelled = calibrateNetwork(*network, *batches, options);
  ASSERT_FALSE(cancelled.isOk());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);
}

TEST(Calibrator, EntropyNeverExceedsMinMax) {
  auto network = importOnnxFile(kQuantDir + "/small_cnn.onnx");
  ASSERT_TRUE(network.isOk());
  auto samples = loadCalibrationFolder(kQuantDir + "/calib", {});
  ASSERT_TRUE(samples.isOk());
  auto batches = makeCalibrationBatches(*samples, "input", 4, 8);
  ASSERT_TRUE(batches.isOk());
  auto result = calibrateNetwork(*network, *batches, {});
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  const CalibrationTable minmax =
      tableFromHistograms(result->histograms, CalibrationMethod::kMinMax, 0, 8);
  for (const auto& [name, range] : result->table.tensors) {
    EXPECT_GT(range.amax, 0) << name;
    EXPECT_LE(range.amax, minmax.find(name)->amax + 1e-9) << name;
  }
  EXPECT_EQ(result->table.method, "entropy");
}

}  // namespace
}  // namespace kiln
