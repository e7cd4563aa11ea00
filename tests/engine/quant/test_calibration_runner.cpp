// The calibrator's runner seam (CalibrationOptions::runner): a runner's values feed
// the same histograms as the CPU reference's, a failing or incomplete runner hands the
// batch and the rest to the CPU with one notice, progress and cancel work with a
// runner, and calibrateOnBackend picks the CPU or says why the GPU is unusable.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "kiln/calibration.h"
#include "kiln/calibration_data.h"
#include "kiln/cuda_calibration.h"
#include "kiln/cuda_runtime.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"

namespace kiln {
namespace {

const std::string kQuantDir = std::string(KILN_TEST_DATA_DIR) + "/quant";

// Runs the CPU reference and returns the names asked for, each float value times
// `scale`; fails on batch `failAt` and leaves `omit` out.
class FakeRunner : public CalibrationRunner {
 public:
  explicit FakeRunner(const Network& network) : m_network(network), m_cpu(network) {}

  std::string name() const override { return "fake"; }
  Status run(const std::map<std::string, Tensor>& batch, const std::vector<std::string>& names,
             std::map<std::string, Tensor>* values) override {
    asked = names;
    if (calls++ == failAt) return internalError("device lost");
    ReferenceRunOptions options;
    for (const std::string& name : names)
      if (!isGraphOutput(name)) options.extraOutputs.push_back(name);
    std::vector<NamedTensor> outputs;
    KILN_RETURN_IF_ERROR(m_cpu.run(batch, &outputs, options));
    for (const NamedTensor& out : outputs)
      if (out.name != omit) (*values)[out.name] = scaled(out.tensor);
    return Status::ok();
  }

  float scale = 1.f;
  int failAt = -1;
  std::string omit;
  int calls = 0;
  std::vector<std::string> asked;

 private:
  bool isGraphOutput(const std::string& name) const {
    for (const ValueInfo& v : m_network.graph.outputs)
      if (v.name == name) return true;
    return false;
  }
  Tensor scaled(const Tensor& t) const {
    if (t.type() != DataType::kFloat32 || scale == 1.f) return t;
    Tensor out = t.clone();
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] *= scale;
    return out;
  }
  const Network& m_network;
  ReferenceBackend m_cpu;
};

class CalibrationRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto network = importOnnxFile(kQuantDir + "/small_cnn.onnx");
    ASSERT_TRUE(network.isOk()) << network.status().toString();
    m_network = std::move(network.value());
    auto samples = loadCalibrationFolder(kQuantDir + "/calib", {});
    ASSERT_TRUE(samples.isOk()) << samples.status().toString();
    auto batches = makeCalibrationBatches(*samples, "input", 4, 3);  // 3 + 3 + 2 samples
    ASSERT_TRUE(batches.isOk()) << batches.status().toString();
    m_batches = std::move(batches.value());
    auto cpu = calibrateNetwork(m_network, m_batches, {});
    ASSERT_TRUE(cpu.isOk()) << cpu.status().toString();
    m_cpu = std::move(cpu.value());
  }

  // Every tensor's histogram and each method's range as the CPU path has them.
  void expectSameAsCpu(const CalibrationResult& result) const {
    ASSERT_EQ(result.histograms.size(), m_cpu.histograms.size());
    for (const auto& [name, cpu] : m_cpu.histograms) {
      ASSERT_TRUE(result.histograms.count(name)) << name;
      const TensorHistogram& h = result.histograms.at(name);
      EXPECT_EQ(h.count(), cpu.count()) << name;
      EXPECT_EQ(h.bins(), cpu.bins()) << name;
      for (CalibrationMethod m : {CalibrationMethod::kEntropy, CalibrationMethod::kMinMax,
                                  CalibrationMethod::kPercentile})
        EXPECT_DOUBLE_EQ(h.amax(m), cpu.amax(m)) << name << " " << calibrationMethodName(m);
    }
    EXPECT_EQ(result.table.samples, 8);
  }

  Network m_network;
  std::vector<std::map<std::string, Tensor>> m_batches;
  CalibrationResult m_cpu;
};

TEST_F(CalibrationRunnerTest, RunnerValuesGiveTheCpuRanges) {
  FakeRunner runner(m_network);
  std::vector<CalibrationProgress> progress;
  int notices = 0;
  CalibrationOptions options;
  options.runner = &runner;
  options.onProgress = [&](const CalibrationProgress& p) { progress.push_back(p); };
  options.onNotice = [&](const std::string&) { ++notices; };
  auto result = calibrateNetwork(m_network, m_batches, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  expectSameAsCpu(*result);
  EXPECT_EQ(runner.calls, 3);
  EXPECT_EQ(notices, 0);
  EXPECT_EQ(result->backend, "fake");
  EXPECT_TRUE(result->fallback.empty());
  EXPECT_GE(result->seconds, 0.0);
  ASSERT_EQ(progress.size(), 3u);
  EXPECT_EQ(progress.back().batchesDone, 3);
  EXPECT_EQ(progress.back().batchesTotal, 3);
  // Asked for every activation and the logits; graph inputs come from the batch.
  const std::set<std::string> asked(runner.asked.begin(), runner.asked.end());
  for (const char* name : {"c0", "r0", "p0", "r1", "a2", "r4", "f5", "logits"})
    EXPECT_TRUE(asked.count(name)) << name;
  EXPECT_FALSE(asked.count("input"));
}

TEST_F(CalibrationRunnerTest, HistogramsTakeTheRunnersValues) {
  FakeRunner runner(m_network);
  runner.scale = 2.f;
  CalibrationOptions options;
  options.method = CalibrationMethod::kMinMax;
  options.runner = &runner;
  auto result = calibrateNetwork(m_network, m_batches, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  const CalibrationTable cpu =
      tableFromHistograms(m_cpu.histograms, CalibrationMethod::kMinMax, 0, 8);
  for (const auto& [name, range] : cpu.tensors) {
    ASSERT_GT(range.amax, 0) << name;
    const double expected = name == "input" ? range.amax : 2 * range.amax;
    EXPECT_DOUBLE_EQ(result->table.find(name)->amax, expected) << name;
  }
}

TEST_F(CalibrationRunnerTest, FailingRunnerHandsTheRestToTheCpuOnce) {
  FakeRunner runner(m_network);
  runner.scale = 2.f;  // batch 0 doubled, batches 1 and 2 on the CPU
  runner.failAt = 1;
  std::vector<std::string> notices;
  CalibrationOptions options;
  options.runner = &runner;
  options.onNotice = [&](const std::string& text) { notices.push_back(text); };
  auto result = calibrateNetwork(m_network, m_batches, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  EXPECT_EQ(runner.calls, 2);  // not asked again after the failure
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("fake failed at calibration batch 1: device lost"), std::string::npos)
      << notices[0];
  EXPECT_EQ(result->backend, "fake for 1 of 3 batches, then cpu");
  EXPECT_NE(result->fallback.find("device lost"), std::string::npos);
  EXPECT_EQ(result->histograms.at("r0").count(), m_cpu.histograms.at("r0").count());
}

TEST_F(CalibrationRunnerTest, MissingValueFallsBackToTheCpu) {
  FakeRunner runner(m_network);
  runner.omit = "r1";
  std::vector<std::string> notices;
  CalibrationOptions options;
  options.runner = &runner;
  options.onNotice = [&](const std::string& text) { notices.push_back(text); };
  auto result = calibrateNetwork(m_network, m_batches, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  expectSameAsCpu(*result);
  EXPECT_EQ(runner.calls, 1);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("'r1'"), std::string::npos) << notices[0];
  EXPECT_EQ(result->backend, "cpu");
}

TEST_F(CalibrationRunnerTest, CancelStopsBetweenRunnerBatches) {
  FakeRunner runner(m_network);
  std::atomic<bool> cancel{false};
  CalibrationOptions options;
  options.runner = &runner;
  options.cancel = &cancel;
  options.onProgress = [&](const CalibrationProgress& p) { cancel = p.batchesDone == 1; };
  auto result = calibrateNetwork(m_network, m_batches, options);
  ASSERT_FALSE(result.isOk());
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(runner.calls, 1);
}

TEST_F(CalibrationRunnerTest, CpuBackendIsTheReference) {
  auto result = cuda::calibrateOnBackend(m_network, m_batches, {}, cuda::CalibrationBackend::kCpu);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  expectSameAsCpu(*result);
  EXPECT_EQ(result->backend, "cpu");
}

TEST_F(CalibrationRunnerTest, DefaultBackendSaysWhyTheGpuIsNotUsed) {
  if (cuda::probeCudaDevice().available) GTEST_SKIP() << "a GPU is usable (tests/gpu covers it)";
  std::vector<std::string> notices;
  CalibrationOptions options;
  options.onNotice = [&](const std::string& text) { notices.push_back(text); };
  auto result =
      cuda::calibrateOnBackend(m_network, m_batches, options, cuda::CalibrationBackend::kDefault);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  expectSameAsCpu(*result);
  EXPECT_EQ(result->backend, "cpu");
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("no usable CUDA device"), std::string::npos) << notices[0];
  auto cuda =
      cuda::calibrateOnBackend(m_network, m_batches, options, cuda::CalibrationBackend::kCuda);
  ASSERT_FALSE(cuda.isOk());
  EXPECT_EQ(cuda.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(cuda.status().message().find("CUDA backend unavailable"), std::string::npos);
}

}  // namespace
}  // namespace kiln
