// The CUDA build's say over fusion (FusionTarget, kiln/passes.h): the passes run as a
// half-precision channels-last CUDA build runs them, asking the CUDA kernel table
// (builtinGpuKernelSupport), on the real models and the attention graphs; no Kiln-domain
// layer of the result lacks a GPU kernel, and an attention the kernel cannot run (head
// size 288) stays unfused with the reason recorded. Needs the CUDA toolkit, not a device:
// it reads the kernel table only, so it runs in CI too.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backends/cuda/gpu_kernel.h"
#include "backends/cuda/ops/fused_attention_limits.h"
#include "engine/passes/attention_graph.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"

namespace kiln::test {
namespace {

// The builder's target for an fp16 build: float32 values stored as float16.
FusionTarget cudaFp16Target(std::vector<std::string>* refusals) {
  return {[](const Node& fused, std::vector<DataType> types, const std::vector<Shape>& shapes) {
            for (DataType& t : types)
              if (t == DataType::kFloat32) t = DataType::kFloat16;
            return cuda::builtinGpuKernelSupport(fused, types, shapes);
          },
          refusals};
}

// Runs the level-2 pipeline as a CUDA fp16 build and checks every Kiln-domain node;
// returns how many there are.
int expectEveryFusedLayerHasAKernel(Network net, const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<std::string> refusals;
  const FusionTarget target = cudaFp16Target(&refusals);
  std::vector<PassApplication> applied;
  const Status ran = runPasses(net, 2, {}, &applied, /*channelsLast=*/true,
                               /*halfPrecision=*/true, &target);
  EXPECT_TRUE(ran.isOk()) << ran.toString();
  int fused = 0;
  for (const Node& n : net.graph.nodes) {
    if (n.domain != kKilnDomain) continue;
    ++fused;
    EXPECT_NE(cuda::builtinGpuKernels().find(n.domain, n.opType, n.opset), nullptr)
        << n.opType << " '" << n.name << "' has no GPU kernel";
  }
  return fused;
}

TEST(CudaFusionTarget, RealModelsKeepOnlyLayersTheGpuRuns) {
  const std::string models = KILN_MODELS_DIR;
  int fused = 0;
  for (const auto& entry : std::filesystem::directory_iterator(models)) {
    const std::string path = entry.path().string() + "/model.onnx";
    if (!std::filesystem::exists(path)) continue;
    auto net = importOnnxFile(path);
    ASSERT_TRUE(net.isOk()) << net.status().toString();
    fused += expectEveryFusedLayerHasAKernel(std::move(net.value()), path);
  }
  auto bert = importOnnxFile(std::string(KILN_TEST_DATA_DIR) + "/builder/tiny_bert.onnx");
  ASSERT_TRUE(bert.isOk()) << bert.status().toString();
  fused += expectEveryFusedLayerHasAKernel(std::move(bert.value()), "tiny_bert");
  EXPECT_GT(fused, 20) << "too little fused: the test would prove little";
}

TEST(CudaFusionTarget, AttentionTheKernelCannotRunStaysUnfused) {
  for (int64_t headDim : {64, 160, 288}) {
    SCOPED_TRACE("head size " + std::to_string(headDim));
    AttentionCase c;
    c.headDim = headDim;
    c.mask = {2, 1, 1, 37};
    Network net = attentionNetwork(c);
    std::vector<std::string> refusals;
    const FusionTarget target = cudaFp16Target(&refusals);
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(net, 1, {}, &applied, false, true, &target).isOk());
    int attention = 0;
    for (const Node& n : net.graph.nodes) attention += n.opType == "FusedAttention";
    // 160 runs padded to 256 (a CPU-only machine does not refuse it for shared memory;
    // a GPU here has the 165 KB it needs or the build says so).
    const int64_t shared = cuda::attentionDeviceSharedBytes();
    const bool wideFits = shared < 0 || shared >= cuda::kWideHeadSharedBytes;
    const bool fuses = headDim <= 128 || (headDim <= 256 && wideFits);
    EXPECT_EQ(attention, fuses ? 1 : 0);
    ASSERT_EQ(refusals.size(), fuses ? 0u : 1u);
    if (!refusals.empty())
      EXPECT_NE(
          refusals[0].find("target refuses FusedAttention: head size " + std::to_string(headDim)),
          std::string::npos)
          << refusals[0];
  }
}

TEST(CudaFusionTarget, LeViTsValueHeadSizeIsAccepted) {
  AttentionCase c;
  c.headDim = 16;
  c.valueDim = 64;
  c.mask = {3, 37, 37};
  Network net = attentionNetwork(c);
  std::vector<std::string> refusals;
  const FusionTarget target = cudaFp16Target(&refusals);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 1, {}, &applied, false, true, &target).isOk());
  EXPECT_TRUE(refusals.empty()) << refusals.front();
  int attention = 0;
  for (const Node& n : net.graph.nodes) attention += n.opType == "FusedAttention";
  EXPECT_EQ(attention, 1);
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// Every (op, opset) of `ops` finds its ai.onnx GPU kernel (no GPU needed to ask).
template <size_t N>
void expectGpuKernels(const std::pair<const char*, int> (&ops)[N]) {
  for (const auto& [op, opset] : ops)
    EXPECT_NE(cuda::builtinGpuKernels().find("", op, opset), nullptr)
        << op << " at opset " << opset;
}

// The data-movement families live in three files (data_movement, slice_pad_tile,
// gather_scatter: each a .cpp host half and an _impl.cu device half) that register through
// registerDataMovementGpuKernels: every op is found at the opsets it serves (no GPU needed to ask).
TEST(CudaKernelRegistry, EveryDataMovementOpHasItsKernel) {
  const std::pair<const char*, int> ops[] = {{"Transpose", 13},
                                             {"Concat", 13},
                                             {"Split", 18},
                                             {"Slice", 13},
                                             {"Pad", 19},
                                             {"Tile", 13},
                                             {"Expand", 13},
                                             {"Gather", 13},
                                             {"GatherElements", 13},
                                             {"GatherND", 13},
                                             {"Scatter", 9},
                                             {"ScatterElements", 18},
                                             {"ScatterND", 18},
                                             {"ReverseSequence", 10}};
  expectGpuKernels(ops);
  EXPECT_EQ(cuda::builtinGpuKernels().find("", "Scatter", 11), nullptr) << "Scatter ends at 10";
}

// The elementwise family lives in three files (elementwise, elementwise_binary,
// elementwise_nary_cast: each a .cpp host half and an _impl.cu device half) registered through
// registerElementwiseGpuKernels: each of its 71 registrations is found at its first opset.
TEST(CudaKernelRegistry, EveryElementwiseOpHasItsKernel) {
  const std::pair<const char*, int> ops[] = {{"Abs", 1},         {"Neg", 1},
                                             {"Sign", 9},        {"Exp", 1},
                                             {"Log", 1},         {"Sqrt", 1},
                                             {"Reciprocal", 1},  {"Floor", 1},
                                             {"Ceil", 1},        {"Round", 11},
                                             {"Sin", 7},         {"Cos", 7},
                                             {"Tan", 7},         {"Asin", 7},
                                             {"Acos", 7},        {"Atan", 7},
                                             {"Sinh", 9},        {"Cosh", 9},
                                             {"Asinh", 9},       {"Acosh", 9},
                                             {"Atanh", 9},       {"Erf", 9},
                                             {"Not", 1},         {"BitwiseNot", 18},
                                             {"IsNaN", 9},       {"IsInf", 10},
                                             {"Relu", 1},        {"LeakyRelu", 1},
                                             {"Elu", 1},         {"Selu", 1},
                                             {"Celu", 12},       {"Sigmoid", 1},
                                             {"HardSigmoid", 1}, {"HardSwish", 14},
                                             {"Tanh", 1},        {"Softplus", 1},
                                             {"Softsign", 1},    {"ThresholdedRelu", 10},
                                             {"Gelu", 20},       {"Mish", 18},
                                             {"Shrink", 9},      {"Swish", 24},
                                             {"SwiGLU", 28},     {"Clip", 1},
                                             {"Clip", 11},       {"PRelu", 7},
                                             {"Add", 7},         {"Sub", 7},
                                             {"Mul", 7},         {"Div", 7},
                                             {"Pow", 7},         {"Mod", 10},
                                             {"BitShift", 11},   {"And", 7},
                                             {"Or", 7},          {"Xor", 7},
                                             {"BitwiseAnd", 18}, {"BitwiseOr", 18},
                                             {"BitwiseXor", 18}, {"Equal", 7},
                                             {"Less", 7},        {"LessOrEqual", 12},
                                             {"Greater", 7},     {"GreaterOrEqual", 12},
                                             {"Max", 1},         {"Min", 1},
                                             {"Sum", 1},         {"Mean", 1},
                                             {"Where", 9},       {"Cast", 6},
                                             {"CastLike", 15}};
  EXPECT_EQ(std::size(ops), 71u);
  expectGpuKernels(ops);
}

// spatial_misc.cpp and col2im_unpool.cpp, registered through registerSpatialMiscGpuKernels.
TEST(CudaKernelRegistry, EverySpatialMiscOpHasItsKernel) {
  const std::pair<const char*, int> ops[] = {
      {"GridSample", 16}, {"RoiAlign", 10},      {"AffineGrid", 20},   {"Col2Im", 18},
      {"MaxUnpool", 9},   {"CenterCropPad", 18}, {"TensorScatter", 24}};
  expectGpuKernels(ops);
}

// quantize.cpp and matmul_integer.cpp, registered through registerQuantizeGpuKernels.
TEST(CudaKernelRegistry, EveryQuantizationOpHasItsKernel) {
  const std::pair<const char*, int> ops[] = {{"QuantizeLinear", 10},
                                             {"DequantizeLinear", 10},
                                             {"DynamicQuantizeLinear", 11},
                                             {"MatMulInteger", 10},
                                             {"QLinearMatMul", 10}};
  expectGpuKernels(ops);
}

// reduce.cpp and arg_cumsum.cpp, registered through registerReduceGpuKernels.
TEST(CudaKernelRegistry, EveryReductionOpHasItsKernel) {
  const char* ops[] = {"ReduceSum",       "ReduceMean",      "ReduceMax", "ReduceMin",
                       "ReduceProd",      "ReduceL1",        "ReduceL2",  "ReduceLogSum",
                       "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",    "ArgMin",
                       "Softmax",         "LogSoftmax",      "Hardmax"};
  for (const char* op : ops) EXPECT_NE(cuda::builtinGpuKernels().find("", op, 13), nullptr) << op;
  EXPECT_NE(cuda::builtinGpuKernels().find("", "CumSum", 14), nullptr);
}

// normalization.cpp and lp_mvn_lrn.cpp, registered through registerNormalizationGpuKernels.
TEST(CudaKernelRegistry, EveryNormalizationOpHasItsKernel) {
  const std::pair<const char*, int> ops[] = {
      {"BatchNormalization", 15},        {"InstanceNormalization", 6},
      {"GroupNormalization", 21},        {"LayerNormalization", 17},
      {"RMSNormalization", 23},          {"LpNormalization", 1},
      {"MeanVarianceNormalization", 13}, {"LRN", 13}};
  expectGpuKernels(ops);
}

// rnn_impl.cu with its host half rnn.cpp, conv_max_pool_impl.cu with conv_max_pool.cpp: the
// registrations and the support predicates that moved to the host halves.
TEST(CudaKernelRegistry, RecurrentAndStemOpsHaveTheirKernels) {
  const std::pair<const char*, int> ops[] = {{"RNN", 14}, {"GRU", 14}, {"LSTM", 14}};
  expectGpuKernels(ops);
  EXPECT_NE(cuda::builtinGpuKernels().find("ai.kiln", "FusedConvMaxPool", 1), nullptr);
  Node lstm;
  lstm.opType = "LSTM";
  lstm.opset = 14;
  const Shape x = {5, 2, 3};
  EXPECT_EQ(cuda::builtinGpuKernelSupport(lstm, {DataType::kFloat16}, {x}), "");
  EXPECT_EQ(cuda::builtinGpuKernelSupport(lstm, {DataType::kFloat64}, {x}),
            "no GPU kernel for float64 inputs");
  lstm.attributes["activations"].kind = Attribute::Kind::kStrings;
  lstm.attributes["activations"].strings = {"Sigmoid", "NoSuchActivation", "Tanh"};
  EXPECT_EQ(cuda::builtinGpuKernelSupport(lstm, {DataType::kFloat16}, {x}),
            "activation 'NoSuchActivation' has no GPU kernel");
  Node stem;
  stem.domain = "ai.kiln";
  stem.opType = "FusedConvMaxPool";
  stem.opset = 1;
  EXPECT_EQ(cuda::builtinGpuKernelSupport(stem, {DataType::kFloat32}, {{1, 3, 8, 8}}),
            "Kiln's stem kernel computes in fp16 or bf16");
}

}  // namespace
}  // namespace kiln::test
