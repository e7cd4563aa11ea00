// Channels-last (NHWC) layers on the CUDA engine against the CPU reference, which runs
// them between two permutations (ir/channels_last.h): FusedConv with a KRSC filter on
// each path, MaxPool / AveragePool windows (16-byte channel packs and one channel at a
// time, pads, strides, ceil_mode, count_include_pad), global pooling; then a ResNet-like
// block through the pipeline with the channels_last_layout pass, end to end at fp16.
//
// Tolerances: the FusedConv ones of test_cuda_fused_conv.cpp (fp32 1e-4, fp16 1e-2,
// bf16 6e-2); pooling is exact up to one rounding of the average (defaults).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "gpu/gpu_op_test.h"
#include "ir/channels_last.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

GpuOpTest channelsLast(const std::string& op, int opset = 17, const std::string& domain = "") {
  GpuOpTest test(op, opset, domain);
  test.attr(kChannelsLastAttribute, int64_t{1});
  return test;
}

TEST(CudaChannelsLast, FusedConvEachPath) {
  KILN_REQUIRE_GPU();
  for (const char* path : {"kiln_epilogue", "auto"}) {
    SCOPED_TRACE(path);
    // X [2, 9, 9, 16] NHWC, W [32, 3, 3, 16] KRSC, B [32], Z [2, 9, 9, 32].
    channelsLast("FusedConv", 1, kKilnDomain)
        .attr("activation", std::string("relu"))
        .attr("path", std::string(path))
        .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .input(randomFloats({2, 9, 9, 16}, 1))
        .constant(randomFloats({32, 3, 3, 16}, 2))
        .constant(randomFloats({32}, 3))
        .input(randomFloats({2, 9, 9, 32}, 4))
        .check(convTolerances());
  }
  // Strided, no residual, an odd channel count (the stem's 3 input channels).
  channelsLast("FusedConv", 1, kKilnDomain)
      .attr("activation", std::string("none"))
      .attr("strides", std::vector<int64_t>{2, 2})
      .attr("pads", std::vector<int64_t>{3, 3, 3, 3})
      .input(randomFloats({2, 20, 20, 3}, 5))
      .constant(randomFloats({8, 7, 7, 3}, 6))
      .constant(randomFloats({8}, 7))
      .check(convTolerances());
}

TEST(CudaChannelsLast, WindowPooling) {
  KILN_REQUIRE_GPU();
  for (int64_t channels : {16, 3}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    channelsLast("MaxPool", 12)
        .attr("kernel_shape", std::vector<int64_t>{3, 3})
        .attr("strides", std::vector<int64_t>{2, 2})
        .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .input(randomFloats({2, 11, 11, channels}, 8))
        .check();
    channelsLast("MaxPool", 12)
        .attr("kernel_shape", std::vector<int64_t>{2, 3})
        .attr("strides", std::vector<int64_t>{2, 2})
        .attr("dilations", std::vector<int64_t>{2, 1})
        .attr("ceil_mode", int64_t{1})
        .input(randomFloats({1, 10, 9, channels}, 9))
        .check();
    for (int64_t includePad : {0, 1}) {
      channelsLast("AveragePool", 19)
          .attr("kernel_shape", std::vector<int64_t>{3, 3})
          .attr("strides", std::vector<int64_t>{2, 2})
          .attr("pads", std::vector<int64_t>{1, 0, 1, 2})
          .attr("count_include_pad", includePad)
          .attr("ceil_mode", int64_t{1})
          .input(randomFloats({2, 8, 9, channels}, 10))
          .check();
    }
  }
}

// int8 and uint8 MaxPool channels-last (fold_qdq's quantized MaxPools): 16-channel packs
// and one channel at a time, padded (the padding never wins).
TEST(CudaChannelsLast, Int8MaxPool) {
  KILN_REQUIRE_GPU();
  for (int64_t channels : {32, 3}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    channelsLast("MaxPool", 12)
        .attr("kernel_shape", std::vector<int64_t>{3, 3})
        .attr("strides", std::vector<int64_t>{2, 2})
        .attr("pads", std::vector<int64_t>{1, 1, 1, 1})
        .input(randomTensor(DataType::kInt8, {2, 11, 11, channels}, 12, -128, 127))
        .check(fp32Only());
    channelsLast("MaxPool", 12)
        .attr("kernel_shape", std::vector<int64_t>{2, 2})
        .input(randomTensor(DataType::kUInt8, {1, 6, 8, channels}, 13, 0, 255))
        .check(fp32Only());
  }
}

TEST(CudaChannelsLast, GlobalPooling) {
  KILN_REQUIRE_GPU();
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    SCOPED_TRACE(op);
    channelsLast(op, 1).input(randomFloats({4, 7, 7, 64}, 11)).check();
    channelsLast(op, 1).input(randomFloats({2, 5, 3, 3}, 12)).check();
    // EfficientNet's first squeeze-excitation pool (112 x 112 positions, 4 packs of 8
    // channels: 64 lanes per pack), a head's 1280 channels (five blocks per image, the
    // last one partial), and single channels split across every lane.
    channelsLast(op, 1).input(randomFloats({3, 112, 112, 32}, 13)).check();
    channelsLast(op, 1).input(randomFloats({2, 7, 7, 1288}, 14)).check();
    channelsLast(op, 1).input(randomFloats({2, 33, 31, 3}, 15)).check();
  }
}

// The reformat layers' transposes: a short side (3 channels; odd and even plane sizes, the
// latter through the 2-byte pairs kernel at fp16), long ones, both ways.
TEST(CudaChannelsLast, ReformatTransposes) {
  KILN_REQUIRE_GPU();
  for (const Shape& shape : {Shape{4, 3, 37, 41}, Shape{2, 3, 16, 12}, Shape{2, 40, 9, 11},
                             Shape{3, 5, 2, 7}, Shape{1, 8, 4, 6}}) {
    SCOPED_TRACE(shapeToString(shape));
    GpuOpTest("Transpose", 13)
        .attr("perm", std::vector<int64_t>{0, 2, 3, 1})
        .input(randomFloats(shape, 30))
        .check({{cuda::Precision::kFloat32, 0, 0}, {cuda::Precision::kFloat16, 0, 0}});
    GpuOpTest("Transpose", 13)
        .attr("perm", std::vector<int64_t>{0, 3, 1, 2})
        .input(randomFloats(shape, 31))
        .check({{cuda::Precision::kFloat32, 0, 0}, {cuda::Precision::kFloat16, 0, 0}});
  }
}

// x [4, 16, 12, 12] -> Conv+BN-free block -> MaxPool -> Conv + residual -> Relu -> GAP ->
// Flatten: the pipeline with channels_last_layout on CUDA at fp16 against the reference.
Network block() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(4), DimExpr(16), DimExpr(12), DimExpr(12)}}};
  const cuda::Precision half = cuda::Precision::kFloat16;
  g.initializers["w1"] = roundTo(randomFloats({32, 16, 3, 3}, 21), half);
  g.initializers["b1"] = roundTo(randomFloats({32}, 22), half);
  g.initializers["w2"] = roundTo(randomFloats({32, 32, 1, 1}, 23), half);
  Node pool = withInts(makeNode("MaxPool", {"r1"}, {"p1"}), "kernel_shape", {3, 3});
  pool = withInts(withInts(std::move(pool), "strides", {2, 2}), "pads", {1, 1, 1, 1});
  g.nodes = {withInts(makeNode("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1}),
             makeNode("Relu", {"c1"}, {"r1"}),
             pool,
             makeNode("Conv", {"p1", "w2"}, {"c2"}),
             makeNode("Add", {"c2", "p1"}, {"a2"}),
             makeNode("Relu", {"a2"}, {"r2"}),
             makeNode("GlobalAveragePool", {"r2"}, {"gap"}),
             makeNode("Flatten", {"gap"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

// The Transpose nodes of `net` (the layout's reformats, once the pipeline ran).
int transposesIn(const Network& net) {
  int count = 0;
  for (const Node& n : net.graph.nodes) count += n.opType == "Transpose" ? 1 : 0;
  return count;
}

// `original` through the pipeline with channels_last_layout, on the CUDA engine at fp16, against
// the reference on `x` (2e-2 relative, and absolute on the scale of the largest expected value:
// fp16 stores every intermediate, so its rounding grows with their magnitude); no layer on the
// host. Returns the pipeline's graph.
std::shared_ptr<Network> expectFp16PipelineMatches(const Network& original, const Tensor& x) {
  auto nhwc = std::make_shared<Network>(original);
  std::vector<PassApplication> applied;
  EXPECT_TRUE(runPasses(*nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  std::vector<NamedTensor> expected;
  EXPECT_TRUE(ReferenceBackend(original).run({{"x", x}}, &expected).isOk());
  cuda::EngineOptions options;
  options.precision = cuda::Precision::kFloat16;
  auto engine = cuda::Engine::create(nhwc, options);
  EXPECT_TRUE(engine.isOk()) << engine.status().toString();
  if (!engine.isOk() || expected.empty()) return nhwc;
  auto context = engine.value()->createContext();
  EXPECT_TRUE(context.isOk()) << context.status().toString();
  if (!context.isOk()) return nhwc;
  EXPECT_TRUE(context.value()->setInputShape("x", x.shape()).isOk());
  EXPECT_TRUE(context.value()->setInput("x", x).isOk());
  Status ran = context.value()->execute();
  EXPECT_TRUE(ran.isOk()) << ran.toString();
  auto y = context.value()->getOutput("y");
  EXPECT_TRUE(y.isOk()) << y.status().toString();
  double peak = 1.0;
  const Tensor& want = expected[0].tensor;
  for (int64_t i = 0; i < want.numel(); ++i)
    peak = std::max(peak, std::fabs(static_cast<double>(want.data<float>()[i])));
  if (y.isOk()) expectTensorNear(y.value(), want, 2e-2 * peak, 2e-2);
  for (const cuda::LayerInfo& layer : context.value()->layers()) {
    std::cout << "  " << layer.name << " [" << layer.opType << "] "
              << cuda::layerPlacementName(layer.placement) << " " << layer.implementation << "\n";
    EXPECT_NE(layer.placement, cuda::LayerPlacement::kHostFallback)
        << layer.name << ": " << layer.note;
  }
  return nhwc;
}

TEST(CudaChannelsLast, BlockThroughThePipelineAtFp16) {
  KILN_REQUIRE_GPU();
  const Tensor x = roundTo(randomFloats({4, 16, 12, 12}, 24), cuda::Precision::kFloat16);
  const auto nhwc = expectFp16PipelineMatches(block(), x);
  int layers = 0;
  for (const Node& n : nhwc->graph.nodes) layers += isChannelsLast(n) ? 1 : 0;
  EXPECT_EQ(layers, 4);  // conv1, maxpool, conv2 (+ add + relu), global pool
}

// FocalNet's modulation (see test_channels_last_layout's FocalModulationStaysInTheRegion) with
// an odd channel count after f (2C + 3 = 35): the Split along NHWC's innermost axis, the gates'
// StridedCopies reading NHWC storage, the broadcasting Mul of [N, C, 1, 1] by [N, 1, H, W] on
// NHWC storage, on CUDA at fp16; only x's and y's reformats.
TEST(CudaChannelsLast, FocalModulationThroughThePipelineAtFp16) {
  KILN_REQUIRE_GPU();
  const int64_t c = 16;
  const cuda::Precision half = cuda::Precision::kFloat16;
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(c), DimExpr(9), DimExpr(11)}}};
  g.initializers["wf"] = roundTo(randomFloats({2 * c + 3, c, 1, 1}, 31), half);
  g.initializers["wd"] = roundTo(randomFloats({c, 1, 3, 3}, 32), half);
  g.initializers["wh"] = roundTo(randomFloats({c, c, 1, 1}, 33), half);
  g.initializers["wp"] = roundTo(randomFloats({c, c, 1, 1}, 34), half);
  g.initializers["sizes"] = Tensor::int64Vector({c, c, 3});
  g.initializers["axis1"] = Tensor::int64Vector({1});
  for (int64_t l : {0, 2}) {
    g.initializers["start" + std::to_string(l)] = Tensor::int64Vector({l});
    g.initializers["end" + std::to_string(l)] = Tensor::int64Vector({l + 1});
  }
  g.nodes = {
      makeNode("Conv", {"x", "wf"}, {"f"}),
      withInt(makeNode("Split", {"f", "sizes"}, {"q", "ctx", "gates"}), "axis", 1),
      withInts(withInt(makeNode("Conv", {"ctx", "wd"}, {"d"}), "group", c), "pads", {1, 1, 1, 1}),
      makeNode("Relu", {"d"}, {"dr"}),
      makeNode("Slice", {"gates", "start0", "end0", "axis1"}, {"g0"}),
      makeNode("Slice", {"gates", "start2", "end2", "axis1"}, {"g2"}),
      makeNode("Mul", {"dr", "g0"}, {"local"}),
      withInt(withInts(makeNode("ReduceMean", {"dr"}, {"global"}), "axes", {2, 3}), "keepdims", 1),
      makeNode("Mul", {"global", "g2"}, {"globalGated"}),
      makeNode("Add", {"local", "globalGated"}, {"all"}),
      makeNode("Conv", {"all", "wh"}, {"mod"}),
      makeNode("Mul", {"q", "mod"}, {"out"}),
      makeNode("Conv", {"out", "wp"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  const Tensor x = roundTo(randomFloats({2, c, 9, 11}, 35), half);
  const auto nhwc = expectFp16PipelineMatches(net, x);
  EXPECT_EQ(transposesIn(*nhwc), 2);  // x's and y's reformats
}

// TResNet's BlurPool (see test_channels_last_layout's
// ReflectPadAndConstantNodeFilterStayInTheRegion) on CUDA at fp16: the reflect Pad on NHWC storage
// (H and W padded, C folded into wider words), the stride-2 depthwise blur from a Constant node's
// filter; only x's and y's reformats.
TEST(CudaChannelsLast, BlurPoolThroughThePipelineAtFp16) {
  KILN_REQUIRE_GPU();
  const int64_t c = 16;
  const cuda::Precision half = cuda::Precision::kFloat16;
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(c), DimExpr(10), DimExpr(9)}}};
  g.initializers["w0"] = roundTo(randomFloats({c, c, 1, 1}, 41), half);
  g.initializers["w1"] = roundTo(randomFloats({8, c, 1, 1}, 42), half);
  g.initializers["pads"] = Tensor::int64Vector({0, 0, 1, 1, 0, 0, 1, 1});
  Node blur = makeNode("Constant", {}, {"blur"});
  Attribute value;
  value.kind = Attribute::Kind::kTensor;
  value.t = roundTo(randomFloats({c, 1, 3, 3}, 43), half);
  blur.attributes["value"] = value;
  g.nodes = {makeNode("Conv", {"x", "w0"}, {"c0"}),
             withString(makeNode("Pad", {"c0", "pads"}, {"p"}), "mode", "reflect"), blur,
             withInts(withInt(withInts(makeNode("Conv", {"p", "blur"}, {"b"}), "strides", {2, 2}),
                              "group", c),
                      "kernel_shape", {3, 3}),
             makeNode("Conv", {"b", "w1"}, {"y"})};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  const Tensor x = roundTo(randomFloats({2, c, 10, 9}, 44), half);
  const auto nhwc = expectFp16PipelineMatches(net, x);
  EXPECT_EQ(transposesIn(*nhwc), 2);  // x's and y's reformats
}

}  // namespace
}  // namespace kiln::test
