// channels_last_layout: a ResNet-like block (Conv+ReLU, MaxPool, Conv with residual,
// AveragePool, GlobalAveragePool, Flatten, Gemm) rewritten to NHWC gives the same outputs
// on the CPU reference (1e-5), with Transposes only at the region's edges and at the one
// value a channels-first node also reads; filters are stored KRSC. The pass runs only
// when asked (the backend prefers channels-last) and can be disabled by name. An INT8
// chain (QuantizedConv, symmetric) goes channels-last through the Quantize between its
// layers, and reads an int8 residual Z NHWC; an asymmetric layer stays channels-first.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "ir/channels_last.h"
#include "ir/pointwise_program.h"
#include "ir/quantized_layers.h"
#include "kiln/passes.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// x [2, 8, 9, 9] -> conv1 (3x3, bias) -> relu -> maxpool 3x3 s2 p1 -> conv2 (1x1) + residual
// -> relu -> avgpool 2x2 -> global avg pool -> flatten -> gemm -> y; "side" = Sigmoid(relu),
// a channels-first reader of a value inside the region, is a second output.
Network block() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(9), DimExpr(9)}}};
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {16, 8, 3, 3}, 1);
  g.initializers["b1"] = randomTensor(DataType::kFloat32, {16}, 2);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {16, 16, 1, 1}, 3);
  g.initializers["wg"] = randomTensor(DataType::kFloat32, {5, 16}, 4);
  g.initializers["bg"] = randomTensor(DataType::kFloat32, {5}, 5);
  g.nodes.push_back(withInts(makeNode("Conv", {"x", "w1", "b1"}, {"c1"}), "pads", {1, 1, 1, 1}));
  g.nodes.push_back(makeNode("Relu", {"c1"}, {"r1"}));
  Node pool = withInts(makeNode("MaxPool", {"r1"}, {"p1"}), "kernel_shape", {3, 3});
  pool = withInts(pool, "strides", {2, 2});
  g.nodes.push_back(withInts(pool, "pads", {1, 1, 1, 1}));
  g.nodes.push_back(makeNode("Conv", {"p1", "w2"}, {"c2"}));
  g.nodes.push_back(makeNode("Add", {"c2", "p1"}, {"a2"}));
  g.nodes.push_back(makeNode("Relu", {"a2"}, {"r2"}));
  g.nodes.push_back(makeNode("Sigmoid", {"r2"}, {"side"}));
  Node avg = withInts(makeNode("AveragePool", {"r2"}, {"ap"}), "kernel_shape", {2, 2});
  avg.attributes["count_include_pad"].i = 1;
  g.nodes.push_back(withInts(avg, "pads", {0, 0, 1, 1}));
  g.nodes.push_back(makeNode("GlobalAveragePool", {"ap"}, {"gap"}));
  g.nodes.push_back(makeNode("Flatten", {"gap"}, {"flat"}));
  Node gemm = makeNode("Gemm", {"flat", "wg", "bg"}, {"y"});
  gemm.attributes["transB"].i = 1;
  g.nodes.push_back(gemm);
  g.outputs = {{"y", DataType::kFloat32, false, {}}, {"side", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, {{"x", randomTensor(DataType::kFloat32, {2, 8, 9, 9}, 11, -2, 2)}});
}

int count(const Network& net, const std::string& op) {
  return static_cast<int>(std::count_if(net.graph.nodes.begin(), net.graph.nodes.end(),
                                        [&](const Node& n) { return n.opType == op; }));
}

TEST(ChannelsLastLayout, ResNetBlockKeepsOutputsWithTransposesOnlyAtEdges) {
  const Network original = block();
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  // conv1 + relu, maxpool, conv2 + add + relu, avgpool, global pool: 5 channels-last layers;
  // the Sigmoid, elementwise, follows the region on NHWC storage (no attribute of its own).
  int channelsLast = 0;
  for (const Node& n : nhwc.graph.nodes) channelsLast += isChannelsLast(n) ? 1 : 0;
  EXPECT_EQ(channelsLast, 5);
  EXPECT_EQ(std::count_if(applied.begin(), applied.end(),
                          [](const PassApplication& a) { return a.pass == kChannelsLastPass; }),
            6);
  // x in; the Sigmoid's output "side" out (a graph output). The global pool's [N, 1, 1, C]
  // reformat before the Flatten moves nothing: fold_view_chains makes it a Reshape.
  EXPECT_EQ(count(nhwc, "Transpose"), 2);
  for (const Node& n : nhwc.graph.nodes)
    if (n.opType == "Transpose")
      EXPECT_EQ(n.opset, 17) << n.name << ": backends look kernels up by it";
  EXPECT_EQ(count(nhwc, "Conv"), 0);
  for (const Node& n : nhwc.graph.nodes) {
    if (n.opType != "FusedConv") continue;
    const Tensor& w = nhwc.graph.initializers.at(n.inputs[1]);
    const Tensor& source = original.graph.initializers.at(n.inputs[1] == "w1_krsc" ? "w1" : "w2");
    EXPECT_EQ(w.shape(), toChannelsLastShape(source.shape()));
    expectTensorNear(permute4d(w, kToChannelsFirst), source, 0, 0);
  }
  EXPECT_EQ(nhwc.graph.initializers.count("w1"), 0u) << "the KCRS filter has no reader left";
  const auto expected = run(original);
  const auto actual = run(nhwc);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
  }
  // Shape inference sees the stored layout inside and the ONNX layout outside.
  auto shapes = inferShapes(nhwc);
  ASSERT_TRUE(shapes.isOk());
  EXPECT_EQ(symbolicShapeToString(shapes.value().values.at("side").shape), "2x16x5x5");
  EXPECT_EQ(symbolicShapeToString(shapes.value().values.at("y").shape), "2x5");
}

// A squeeze-excitation block with a layer scale, as EfficientNet and ConvNeXt have them:
// x -> conv -> c; s = Sigmoid(Conv(Relu(Conv(GAP(c))))) [2, 16, 1, 1]; Mul(c, s) * gamma
// [16, 1, 1] -> conv -> y. The Muls follow the region (s is NHWC already, gamma is stored
// [1, 1, 1, 16]): Transposes only for x and y, outputs unchanged.
TEST(ChannelsLastLayout, SqueezeExcitationScaleStaysInTheRegion) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(9), DimExpr(9)}}};
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {16, 8, 3, 3}, 1);
  g.initializers["wr"] = randomTensor(DataType::kFloat32, {4, 16, 1, 1}, 2);
  g.initializers["we"] = randomTensor(DataType::kFloat32, {16, 4, 1, 1}, 3);
  g.initializers["gamma"] = randomTensor(DataType::kFloat32, {16, 1, 1}, 4, 0.5, 1.5);
  g.initializers["w3"] = randomTensor(DataType::kFloat32, {8, 16, 1, 1}, 5);
  g.nodes.push_back(withInts(makeNode("Conv", {"x", "w1"}, {"c"}), "pads", {1, 1, 1, 1}));
  g.nodes.push_back(makeNode("GlobalAveragePool", {"c"}, {"gap"}));
  g.nodes.push_back(makeNode("Conv", {"gap", "wr"}, {"r"}));
  g.nodes.push_back(makeNode("Relu", {"r"}, {"rr"}));
  g.nodes.push_back(makeNode("Conv", {"rr", "we"}, {"e"}));
  g.nodes.push_back(makeNode("Sigmoid", {"e"}, {"s"}));
  g.nodes.push_back(makeNode("Mul", {"c", "s"}, {"m"}));
  g.nodes.push_back(makeNode("Mul", {"m", "gamma"}, {"mg"}));
  g.nodes.push_back(makeNode("Conv", {"mg", "w3"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  for (int level : {1, 2}) {  // level 2 makes the two Muls one PointwiseChain first
    SCOPED_TRACE("level " + std::to_string(level));
    Network nhwc = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(nhwc, level, {}, &applied, /*channelsLast=*/true).isOk());
    if (level == 1) {
      EXPECT_EQ(count(nhwc, "Transpose"), 0) << "the layout pass runs from level 2";
      continue;
    }
    EXPECT_EQ(count(nhwc, "Transpose"), 2);  // x in, y out
    const auto x = randomTensor(DataType::kFloat32, {2, 8, 9, 9}, 11, -2, 2);
    const auto expected = runOnReference(net, {{"x", x}});
    const auto actual = runOnReference(nhwc, {{"x", x}});
    ASSERT_EQ(actual.size(), 1u);
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  }
}

// A DenseNet block: c0 = Relu(Conv(x)); d1 = Conv1x1(Relu(BN(c0))); cat = Concat(c0, d1)
// along channels; y = Conv1x1(Relu(BN(cat))). The BNs become PointwiseChains
// (batch_norm_as_scale_shift) that follow the region, the Concat follows along NHWC
// axis 3: Transposes only for x and y, no BN left, outputs unchanged.
TEST(ChannelsLastLayout, DenseBlockConcatAndPreActivationBnStayInTheRegion) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(9), DimExpr(9)}}};
  g.initializers["w0"] = randomTensor(DataType::kFloat32, {16, 8, 3, 3}, 1);
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {8, 16, 1, 1}, 2);
  g.initializers["w2"] = randomTensor(DataType::kFloat32, {4, 24, 1, 1}, 3);
  for (const auto& [name, c] : {std::pair<std::string, int64_t>{"n1", 16}, {"n2", 24}}) {
    g.initializers[name + "_g"] = randomTensor(DataType::kFloat32, {c}, 4, 0.5, 1.5);
    g.initializers[name + "_b"] = randomTensor(DataType::kFloat32, {c}, 5);
    g.initializers[name + "_m"] = randomTensor(DataType::kFloat32, {c}, 6);
    g.initializers[name + "_v"] = randomTensor(DataType::kFloat32, {c}, 7, 0.2, 2.0);
  }
  auto bn = [](const std::string& in, const std::string& n, const std::string& out) {
    return makeNode("BatchNormalization", {in, n + "_g", n + "_b", n + "_m", n + "_v"}, {out});
  };
  g.nodes.push_back(withInts(makeNode("Conv", {"x", "w0"}, {"c"}), "pads", {1, 1, 1, 1}));
  g.nodes.push_back(makeNode("Relu", {"c"}, {"c0"}));
  g.nodes.push_back(bn("c0", "n1", "b1"));
  g.nodes.push_back(makeNode("Relu", {"b1"}, {"r1"}));
  g.nodes.push_back(makeNode("Conv", {"r1", "w1"}, {"d1"}));
  g.nodes.push_back(withInt(makeNode("Concat", {"c0", "d1"}, {"cat"}), "axis", 1));
  g.nodes.push_back(bn("cat", "n2", "b2"));
  g.nodes.push_back(makeNode("Relu", {"b2"}, {"r2"}));
  g.nodes.push_back(makeNode("Conv", {"r2", "w2"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  Network nhwc = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  EXPECT_EQ(count(nhwc, "Transpose"), 2);
  EXPECT_EQ(count(nhwc, "BatchNormalization"), 0);
  EXPECT_EQ(count(nhwc, kPointwiseChainOp), 2);
  for (const Node& n : nhwc.graph.nodes)
    if (n.opType == "Concat") EXPECT_EQ(n.attrInt("axis", -1), 3);
  const auto expected = run(net);
  const auto actual = run(nhwc);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

// ShuffleNetV2's stride-1 unit: chunk the channels in two (Slices along axis 1, constant
// axes as an input at opset 13, as an attribute at opset 9), convolve one half, concatenate
// and shuffle. The Slices follow the region with their axes permuted (1 -> 3); with the
// shuffle folded by fold_view_chains, only x's and y's reformats and the shuffle's one
// Transpose are left.
TEST(ChannelsLastLayout, ChannelSplitAndShuffleStayInTheRegion) {
  for (int opset : {13, 9}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Network net;
    net.opsets[""] = opset;
    Graph& g = net.graph;
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(5), DimExpr(5)}}};
    g.initializers["w0"] = randomTensor(DataType::kFloat32, {8, 8, 1, 1}, 1);
    g.initializers["w1"] = randomTensor(DataType::kFloat32, {4, 4, 3, 3}, 2);
    g.initializers["w2"] = randomTensor(DataType::kFloat32, {8, 8, 1, 1}, 3);
    g.initializers["groups"] = Tensor::int64Vector({2, 2, 4, 5, 5});
    g.initializers["merged"] = Tensor::int64Vector({2, 8, 5, 5});
    auto slice = [&](const std::string& out, int64_t start, int64_t end) {
      Node n = makeNode("Slice", {"c0"}, {out}, opset);
      if (opset < 10) {
        n = withInts(withInts(withInts(n, "starts", {start}), "ends", {end}), "axes", {1});
      } else {
        g.initializers[out + "_starts"] = Tensor::int64Vector({start});
        g.initializers[out + "_ends"] = Tensor::int64Vector({end});
        g.initializers[out + "_axes"] = Tensor::int64Vector({1});
        n.inputs = {"c0", out + "_starts", out + "_ends", out + "_axes"};
      }
      return n;
    };
    g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}, opset));
    g.nodes.push_back(slice("left", 0, 4));
    g.nodes.push_back(slice("right", 4, 8));
    g.nodes.push_back(
        withInts(makeNode("Conv", {"right", "w1"}, {"r1"}, opset), "pads", {1, 1, 1, 1}));
    g.nodes.push_back(makeNode("Relu", {"r1"}, {"r2"}, opset));
    g.nodes.push_back(withInt(makeNode("Concat", {"left", "r2"}, {"cat"}, opset), "axis", 1));
    g.nodes.push_back(makeNode("Reshape", {"cat", "groups"}, {"gr"}, opset));
    g.nodes.push_back(
        withInts(makeNode("Transpose", {"gr"}, {"tr"}, opset), "perm", {0, 2, 1, 3, 4}));
    g.nodes.push_back(makeNode("Reshape", {"tr", "merged"}, {"sh"}, opset));
    g.nodes.push_back(makeNode("Conv", {"sh", "w2"}, {"y"}, opset));
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    Network nhwc = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
    EXPECT_EQ(count(nhwc, "Transpose"), 3);
    for (const Node& n : nhwc.graph.nodes) {
      if (n.opType != "Slice") continue;
      if (opset < 10)
        EXPECT_EQ(n.attrInts("axes"), std::vector<int64_t>{3});
      else
        EXPECT_EQ(nhwc.graph.initializers.at(n.inputs[3]).valueAsInt64(0), 3);
    }
    const auto run = [](const Network& n) {
      return runOnReference(n, {{"x", randomTensor(DataType::kFloat32, {2, 8, 5, 5}, 4)}});
    };
    const auto expected = run(net);
    const auto actual = run(nhwc);
    ASSERT_EQ(actual.size(), 1u);
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  }
}

// PoolFormer's block: GroupNorm(1, C) as torch exports it (Reshape to [N, 1, C * H * W],
// InstanceNormalization with a scalar scale and bias, Reshape back (to a Shape of the input, as
// torch writes it), then the per-channel
// affine), the pooling token mixer (pool(x) - x) and the residual, between two convolutions.
// The norm follows the region on NHWC storage (its last Reshape to [N, H, W, C]): only x's
// and y's reformats are left, and the outputs are the channels-first graph's.
TEST(ChannelsLastLayout, WholeSampleNormStaysInTheRegion) {
  // Eight channels with the flat target spelled out; one channel with [0, 0, -1] (its 0s copy
  // N and C = 1; on NHWC storage a 0 in place 1 would copy H: the pass spells it out); and a
  // symbolic batch, where Shape(x) stays a node until the region drops it (else it would keep
  // a reformat of x alive).
  struct Case {
    int64_t c;
    bool symbolicBatch;
  };
  for (const Case& k : {Case{8, false}, Case{1, false}, Case{8, true}}) {
    const int64_t c = k.c;
    SCOPED_TRACE(std::to_string(c) + " channels" + (k.symbolicBatch ? ", symbolic batch" : ""));
    Network net;
    net.opsets[""] = 17;
    Graph& g = net.graph;
    const DimExpr batch = k.symbolicBatch ? DimExpr::symbol("N") : DimExpr(2);
    g.inputs = {{"x", DataType::kFloat32, true, {batch, DimExpr(c), DimExpr(5), DimExpr(5)}}};
    g.initializers["w0"] = randomTensor(DataType::kFloat32, {c, c, 1, 1}, 1);
    g.initializers["w2"] = randomTensor(DataType::kFloat32, {c, c, 1, 1}, 2);
    g.initializers["flat"] =
        Tensor::int64Vector(c == 1 ? std::vector<int64_t>{0, 0, -1}
                                   : std::vector<int64_t>{k.symbolicBatch ? 0 : 2, 1, -1});
    // The scale as a Constant node (torch's export), the bias as an initializer.
    Node scale = makeNode("Constant", {}, {"one_scale"});
    Attribute value;
    value.kind = Attribute::Kind::kTensor;
    value.t = randomTensor(DataType::kFloat32, {1}, 3, 0.5, 1.5);
    scale.attributes["value"] = value;
    g.nodes.push_back(scale);
    g.initializers["one_bias"] = randomTensor(DataType::kFloat32, {1}, 4);
    g.initializers["gamma"] = randomTensor(DataType::kFloat32, {c, 1, 1}, 5, 0.5, 1.5);
    g.initializers["beta"] = randomTensor(DataType::kFloat32, {c, 1, 1}, 6);
    g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}));
    g.nodes.push_back(makeNode("Reshape", {"c0", "flat"}, {"f"}));
    g.nodes.push_back(makeNode("InstanceNormalization", {"f", "one_scale", "one_bias"}, {"in"}));
    g.nodes.push_back(makeNode("Shape", {"c0"}, {"image"}));
    g.nodes.push_back(makeNode("Reshape", {"in", "image"}, {"n0"}));
    g.nodes.push_back(makeNode("Mul", {"n0", "gamma"}, {"n1"}));
    g.nodes.push_back(makeNode("Add", {"n1", "beta"}, {"n"}));
    Node pool = withInts(makeNode("AveragePool", {"n"}, {"p"}), "kernel_shape", {3, 3});
    pool.attributes["count_include_pad"].i = 0;
    g.nodes.push_back(withInts(pool, "pads", {1, 1, 1, 1}));
    g.nodes.push_back(makeNode("Sub", {"p", "n"}, {"mixed"}));
    g.nodes.push_back(makeNode("Add", {"mixed", "c0"}, {"r"}));
    g.nodes.push_back(makeNode("Conv", {"r", "w2"}, {"y"}));
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    Network nhwc = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
    EXPECT_EQ(count(nhwc, "Transpose"), 2);
    EXPECT_EQ(count(nhwc, "InstanceNormalization"), 1);
    const auto run = [c](const Network& n) {
      return runOnReference(n, {{"x", randomTensor(DataType::kFloat32, {2, c, 5, 5}, 7, -1, 3)}});
    };
    const auto expected = run(net);
    const auto actual = run(nhwc);
    ASSERT_EQ(actual.size(), 1u);
    expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  }
}

// SegFormer's decoder: two token maps ([2, 16, 8] of a 4x4 image, [2, 4, 8] of a 2x2 one),
// each projected (MatMul), viewed as an image (Transpose (0, 2, 1), Reshape) and resized
// bilinearly to 4x4 (by sizes, and by scales), and a third 4x4 map viewed alone (its
// same-size Resize gone), concatenated and fused by a 1x1 Conv. The Resizes join the region
// (their readers are the Concat of them and the view, then the Conv), with their sizes and
// scales permuted to NHWC; fold_view_chains makes each image view and its reformat one
// Reshape, so y's reformat is the one Transpose left. A Resize whose output is the graph's
// stays channels-first.
TEST(ChannelsLastLayout, DecoderResizesAndTheirConcatStayInTheRegion) {
  Network net;
  net.opsets[""] = 13;
  Graph& g = net.graph;
  g.inputs = {{"t0", DataType::kFloat32, true, {DimExpr(2), DimExpr(16), DimExpr(8)}},
              {"t1", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(8)}},
              {"t2", DataType::kFloat32, true, {DimExpr(2), DimExpr(16), DimExpr(8)}}};
  g.initializers["wp"] = randomTensor(DataType::kFloat32, {8, 6}, 1);
  g.initializers["wf"] = randomTensor(DataType::kFloat32, {5, 18, 1, 1}, 2);
  g.initializers["image2"] = Tensor::int64Vector({2, 6, 4, 4});
  g.initializers["image0"] = Tensor::int64Vector({2, 6, 4, 4});
  g.initializers["image1"] = Tensor::int64Vector({2, 6, 2, 2});
  g.initializers["sizes"] = Tensor::int64Vector({2, 6, 4, 4});
  g.initializers["scales"] =
      Tensor::fromVector(DataType::kFloat32, {4}, std::vector<float>{1, 1, 2, 2});
  for (int k : {0, 1, 2}) {
    const std::string t = "t" + std::to_string(k), v = "v" + std::to_string(k);
    g.nodes.push_back(makeNode("MatMul", {t, "wp"}, {t + "p"}));
    g.nodes.push_back(withInts(makeNode("Transpose", {t + "p"}, {t + "c"}), "perm", {0, 2, 1}));
    g.nodes.push_back(makeNode("Reshape", {t + "c", "image" + std::to_string(k)}, {v}));
    if (k == 2) break;
    Node resize = k == 0 ? makeNode("Resize", {v, "", "", "sizes"}, {v + "r"})
                         : makeNode("Resize", {v, "", "scales"}, {v + "r"});
    g.nodes.push_back(withString(resize, "mode", "linear"));
  }
  g.nodes.push_back(withInt(makeNode("Concat", {"v0r", "v1r", "v2"}, {"cat"}), "axis", 1));
  g.nodes.push_back(makeNode("Conv", {"cat", "wf"}, {"y"}));
  // The graph output's Resize: an upsampled map read by no region layer.
  g.initializers["big"] = Tensor::int64Vector({2, 5, 8, 8});
  g.nodes.push_back(withString(makeNode("Resize", {"y", "", "", "big"}, {"up"}), "mode", "linear"));
  g.outputs = {{"up", DataType::kFloat32, false, {}}};
  Network nhwc = net;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  EXPECT_EQ(count(nhwc, "Transpose"), 1);
  const Graph& out = nhwc.graph;
  for (const Node& n : out.nodes) {
    if (n.opType != "Resize") continue;
    if (n.outputs[0] == "up") {
      EXPECT_EQ(out.initializers.at(n.inputs[3]).toInt64Vector(),
                (std::vector<int64_t>{2, 5, 8, 8}));
    } else if (n.hasInput(3)) {
      EXPECT_EQ(out.initializers.at(n.inputs[3]).toInt64Vector(),
                (std::vector<int64_t>{2, 4, 4, 6}));
    } else {
      const Tensor& scales = out.initializers.at(n.inputs[2]);
      EXPECT_EQ(scales.valueAsDouble(1), 2.0);
      EXPECT_EQ(scales.valueAsDouble(3), 1.0);
    }
  }
  const auto run = [](const Network& n) {
    return runOnReference(n, {{"t0", randomTensor(DataType::kFloat32, {2, 16, 8}, 4)},
                              {"t1", randomTensor(DataType::kFloat32, {2, 4, 8}, 5)},
                              {"t2", randomTensor(DataType::kFloat32, {2, 16, 8}, 6)}});
  };
  const auto expected = run(net);
  const auto actual = run(nhwc);
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

TEST(ChannelsLastLayout, RunsOnlyWhenAskedAndCanBeDisabled) {
  Network plain = block();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(plain, 2, {}, &applied, /*channelsLast=*/false).isOk());
  EXPECT_EQ(count(plain, "Transpose"), 0);
  Network disabled = block();
  ASSERT_TRUE(runPasses(disabled, 2, {kChannelsLastPass}, &applied, true).isOk());
  EXPECT_EQ(count(disabled, "Transpose"), 0);
  Network level1 = block();
  ASSERT_TRUE(runPasses(level1, 1, {}, &applied, true).isOk());
  EXPECT_EQ(count(level1, "Transpose"), 0) << "the layout pass is a level-2 pass";
}

TEST(ChannelsLastLayout, ChannelsLastNodeWithWrongRankFailsClearly) {
  Network net = block();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(net, 2, {}, &applied, true).isOk());
  // Feed the channels-last MaxPool a 3-D value by hand: a clear error naming the node.
  Node* pool = nullptr;
  for (Node& n : net.graph.nodes)
    if (n.opType == "MaxPool") pool = &n;
  ASSERT_NE(pool, nullptr);
  std::vector<Tensor> out;
  Status s = runReferenceNode(
      *pool, {{pool->inputs[0], randomTensor(DataType::kFloat32, {2, 3, 4}, 7)}}, &out);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("must be 4-D"), std::string::npos) << s.toString();
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// An INT8 chain as fold_qdq leaves it: x -> Quantize -> qconv1 (int8 out) -> qconv2
// (ReLU, float out) -> Quantize -> qconv3 (residual Z = qconv2's output, float out).
Node quantizedConv(const std::string& x, const std::string& w, const std::string& y,
                   bool int8Output, const std::string& z = "") {
  Node n = makeNode("QuantizedConv", {x, w, "qb", z, "sx", "zp", "sw"}, {y}, 1);
  n.domain = kKilnDomain;
  if (int8Output) {
    n.inputs.push_back("sy");
    n.inputs.push_back("zp");
  }
  return withInts(n, "pads", {1, 1, 1, 1});
}

Network int8Chain() {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(8), DimExpr(6), DimExpr(6)}}};
  for (const char* w : {"w1", "w2", "w3"}) {
    Tensor t(DataType::kInt8, {8, 8, 3, 3});
    const Tensor r = randomTensor(DataType::kFloat32, {8, 8, 3, 3}, static_cast<uint32_t>(w[1]));
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int8_t>()[i] = static_cast<int8_t>(r.data<float>()[i] * 100);
    g.initializers[w] = t;
  }
  g.initializers["qb"] = randomTensor(DataType::kFloat32, {8}, 21);
  g.initializers["sx"] = floatTensor({}, {0.02f});
  g.initializers["sy"] = floatTensor({}, {0.05f});
  g.initializers["sw"] = randomTensor(DataType::kFloat32, {8}, 22, 0.001, 0.004);
  g.initializers["zp"] = Tensor(DataType::kInt8, {});
  g.nodes = {makeNode("QuantizeLinear", {"x", "sx", "zp"}, {"xq"}),
             quantizedConv("xq", "w1", "q1", true),
             withString(quantizedConv("q1", "w2", "f2", false), "activation", "relu"),
             makeNode("QuantizeLinear", {"f2", "sx", "zp"}, {"q2"}),
             quantizedConv("q2", "w3", "y", false, "f2")};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

TEST(ChannelsLastLayout, Int8ChainRunsChannelsLastThroughItsQuantize) {
  const Network original = int8Chain();
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  int convs = 0;
  for (const Node& n : nhwc.graph.nodes) convs += n.opType == "QuantizedConv" && isChannelsLast(n);
  EXPECT_EQ(convs, 3);
  // In: the quantized input (int8) once; out: y. The Quantize between qconv2 and
  // qconv3 reads and writes NHWC without a reformat of its own.
  EXPECT_EQ(count(nhwc, "Transpose"), 2);
  const Tensor x = randomTensor(DataType::kFloat32, {2, 8, 6, 6}, 23, -2, 2);
  const auto expected = runOnReference(original, {{"x", x}});
  const auto actual = runOnReference(nhwc, {{"x", x}});
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
  // An asymmetric layer (x zero point 3) stays channels-first.
  Network asymmetric = int8Chain();
  asymmetric.graph.initializers["zp3"] = Tensor(DataType::kInt8, {});
  asymmetric.graph.initializers["zp3"].data<int8_t>()[0] = 3;
  asymmetric.graph.nodes[1].inputs[5] = "zp3";
  asymmetric.graph.nodes[0].inputs[2] = "zp3";
  ASSERT_TRUE(runPasses(asymmetric, 2, {}, &applied, true).isOk());
  int asymmetricSeen = 0;
  for (const Node& n : asymmetric.graph.nodes) {
    if (n.opType != "QuantizedConv" || n.inputs[kQuantXZeroPoint] != "zp3") continue;
    ++asymmetricSeen;
    EXPECT_FALSE(isChannelsLast(n));
  }
  EXPECT_EQ(asymmetricSeen, 1);
}

// fold_qdq's quantized MaxPool (int8, between qconv1's int8 output and qconv2) joins
// the channels-last region: no reformat around it, same values as channels-first.
TEST(ChannelsLastLayout, Int8MaxPoolStaysInTheRegion) {
  Network original = int8Chain();
  Graph& g = original.graph;
  g.nodes[2].inputs[0] = "p1";
  Node pool = withInts(makeNode("MaxPool", {"q1"}, {"p1"}), "kernel_shape", {3, 3});
  pool = withInts(pool, "pads", {1, 1, 1, 1});
  g.nodes.insert(g.nodes.begin() + 2, pool);
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  bool poolChannelsLast = false;
  for (const Node& n : nhwc.graph.nodes)
    poolChannelsLast = poolChannelsLast || (n.opType == "MaxPool" && isChannelsLast(n));
  EXPECT_TRUE(poolChannelsLast);
  EXPECT_EQ(count(nhwc, "Transpose"), 2);  // in and out only, as without the MaxPool
  const Tensor x = randomTensor(DataType::kFloat32, {2, 8, 6, 6}, 24, -2, 2);
  const auto expected = runOnReference(original, {{"x", x}});
  const auto actual = runOnReference(nhwc, {{"x", x}});
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

// An int8 residual (slot 9, z_scale): qconv3 adds qconv1's int8 output as Z. Z is an
// activation like X, read NHWC straight from qconv1 without a reformat of its own;
// z_scale, one scalar, stays as it is.
TEST(ChannelsLastLayout, Int8ResidualIsReadChannelsLast) {
  Network original = int8Chain();
  Node& qconv3 = original.graph.nodes[4];
  qconv3.inputs[kQuantResidual] = "q1";
  qconv3.inputs.resize(kQuantSlots);
  qconv3.inputs[kQuantZScale] = "sy";
  Network nhwc = original;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  const Node* residual = nullptr;
  for (const Node& n : nhwc.graph.nodes)
    if (n.opType == "QuantizedConv" && n.hasInput(kQuantZScale)) residual = &n;
  ASSERT_NE(residual, nullptr);
  EXPECT_TRUE(isChannelsLast(*residual));
  EXPECT_EQ(residual->inputs[kQuantZScale], "sy");
  const Node* writer = nullptr;
  for (const Node& n : nhwc.graph.nodes)
    if (!n.outputs.empty() && n.outputs[0] == residual->inputs[kQuantResidual]) writer = &n;
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->opType, "QuantizedConv");  // qconv1 itself, no Transpose between
  EXPECT_TRUE(isChannelsLast(*writer));
  EXPECT_EQ(count(nhwc, "Transpose"), 2);  // still only the input's and y's
  const Tensor x = randomTensor(DataType::kFloat32, {2, 8, 6, 6}, 24, -2, 2);
  const auto expected = runOnReference(original, {{"x", x}});
  const auto actual = runOnReference(nhwc, {{"x", x}});
  ASSERT_EQ(actual.size(), 1u);
  expectTensorNear(actual[0].tensor, expected[0].tensor, 1e-5, 1e-5);
}

}  // namespace
}  // namespace kiln::test
