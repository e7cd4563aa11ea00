// channels_last_layout's followers beyond the elementwise ops (the pass's own tests:
// test_channels_last_layout.cpp): a Split of a region value along the permuted axis
// (InceptionNeXt's token mixer, FocalNet's q / ctx / gates; one whose outputs feed no region
// layer stays channels-first, one with an output read channels-first gets its reformat back),
// a StridedCopy box of a region value with its geometry rewritten for NHWC storage (FocalNet's
// gates), elementwise ops on region values of any broadcast shapes, a Pad in any mode with its
// pads or axes permuted and a convolution whose filter is a Constant node (TResNet's
// BlurPool). Each rewritten graph gives the channels-first graph's outputs on the CPU reference.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// `net` through the pipeline with channels_last_layout (level 2, as a CUDA half-precision
// build asks for it).
Network channelsLast(const Network& net) {
  Network nhwc = net;
  std::vector<PassApplication> applied;
  EXPECT_TRUE(runPasses(nhwc, 2, {}, &applied, /*channelsLast=*/true).isOk());
  return nhwc;
}

// `original` and `nhwc` on the CPU reference with x = `x`: `outputs` outputs each, the same
// names in the same order, equal within 1e-5.
void expectSameOutputs(const Network& original, const Network& nhwc, const Tensor& x,
                       size_t outputs) {
  const auto expected = runOnReference(original, {{"x", x}});
  const auto actual = runOnReference(nhwc, {{"x", x}});
  ASSERT_EQ(expected.size(), outputs);
  ASSERT_EQ(actual.size(), outputs);
  for (size_t k = 0; k < outputs; ++k) {
    EXPECT_EQ(actual[k].name, expected[k].name);
    expectTensorNear(actual[k].tensor, expected[k].tensor, 1e-5, 1e-5);
  }
}

// InceptionNeXt's token mixer: a Split of a region value into an identity part and three
// branches (a depthwise square, a 1 x k and a k x 1 convolution), concatenated back, then its
// BatchNorm and a 1x1 convolution. The Split follows the region along the permuted axis (1 ->
// 3), so only x's and y's reformats are left; the outputs are the channels-first graph's.
TEST(ChannelsLastLayout, ChannelSplitIntoConvolutionBranchesStaysInTheRegion) {
  for (int opset : {17, 11}) {  // the sizes as an input, and as an attribute
    SCOPED_TRACE("opset " + std::to_string(opset));
    Network net;
    net.opsets[""] = opset;
    Graph& g = net.graph;
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(6), DimExpr(5), DimExpr(5)}}};
    g.initializers["w0"] = randomTensor(DataType::kFloat32, {10, 6, 1, 1}, 1);
    g.initializers["wsq"] = randomTensor(DataType::kFloat32, {2, 1, 3, 3}, 2);
    g.initializers["ww"] = randomTensor(DataType::kFloat32, {2, 1, 1, 3}, 3);
    g.initializers["wh"] = randomTensor(DataType::kFloat32, {2, 1, 3, 1}, 4);
    g.initializers["w1"] = randomTensor(DataType::kFloat32, {4, 10, 1, 1}, 5);
    g.initializers["bn_g"] = randomTensor(DataType::kFloat32, {10}, 6, 0.5, 1.5);
    g.initializers["bn_b"] = randomTensor(DataType::kFloat32, {10}, 7);
    g.initializers["bn_m"] = randomTensor(DataType::kFloat32, {10}, 8);
    g.initializers["bn_v"] = randomTensor(DataType::kFloat32, {10}, 9, 0.2, 2.0);
    g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}, opset));
    Node split = withInt(makeNode("Split", {"c0"}, {"id", "s1", "s2", "s3"}, opset), "axis", 1);
    if (opset >= 13) {
      g.initializers["sizes"] = Tensor::int64Vector({4, 2, 2, 2});
      split.inputs.push_back("sizes");
    } else {
      split = withInts(split, "split", {4, 2, 2, 2});
    }
    g.nodes.push_back(split);
    auto depthwise = [&](const std::string& in, const std::string& w, const std::string& out,
                         std::vector<int64_t> pads) {
      return withInts(withInt(makeNode("Conv", {in, w}, {out}, opset), "group", 2), "pads", pads);
    };
    g.nodes.push_back(depthwise("s1", "wsq", "b1", {1, 1, 1, 1}));
    g.nodes.push_back(depthwise("s2", "ww", "b2", {0, 1, 0, 1}));
    g.nodes.push_back(depthwise("s3", "wh", "b3", {1, 0, 1, 0}));
    g.nodes.push_back(
        withInt(makeNode("Concat", {"id", "b1", "b2", "b3"}, {"cat"}, opset), "axis", 1));
    g.nodes.push_back(
        makeNode("BatchNormalization", {"cat", "bn_g", "bn_b", "bn_m", "bn_v"}, {"bn"}, opset));
    g.nodes.push_back(makeNode("Conv", {"bn", "w1"}, {"y"}, opset));
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    const Network nhwc = channelsLast(net);
    EXPECT_EQ(countOps(nhwc, "Transpose"), 2);
    ASSERT_EQ(countOps(nhwc, "Split"), 1);
    for (const Node& n : nhwc.graph.nodes)
      if (n.opType == "Split" || n.opType == "Concat") EXPECT_EQ(n.attrInt("axis", -1), 3);
    expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 6, 5, 5}, 10, -2, 2), 1);
  }
}

// FocalNet's modulation: f (1x1) -> Split into q [C], ctx [C] and gates [2]; ctx through a
// depthwise convolution, times its gate (a Slice of gates: fold_split_views makes it a
// StridedCopy of f's output), plus the global context (a ReduceMean over H and W, [N, C, 1, 1])
// times the second gate ([N, 1, H, W]: neither factor has the product's full shape); h (1x1)
// of that, times q, then proj. Everything follows the region: the StridedCopies read their
// gate from NHWC storage (stride C + 2 along W, offset 2C + l), the broadcasting Mul computes
// on NHWC storage, and only x's and y's reformats are left.
TEST(ChannelsLastLayout, FocalModulationStaysInTheRegion) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  const int64_t c = 4;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(c), DimExpr(5), DimExpr(6)}}};
  g.initializers["wf"] = randomTensor(DataType::kFloat32, {2 * c + 2, c, 1, 1}, 1);
  g.initializers["bf"] = randomTensor(DataType::kFloat32, {2 * c + 2}, 2);
  g.initializers["wd"] = randomTensor(DataType::kFloat32, {c, 1, 3, 3}, 3);
  g.initializers["wh"] = randomTensor(DataType::kFloat32, {c, c, 1, 1}, 4);
  g.initializers["wp"] = randomTensor(DataType::kFloat32, {c, c, 1, 1}, 5);
  g.initializers["sizes"] = Tensor::int64Vector({c, c, 2});
  for (int64_t l : {0, 1}) {
    const std::string k = std::to_string(l);
    g.initializers["start" + k] = Tensor::int64Vector({l});
    g.initializers["end" + k] = Tensor::int64Vector({l + 1});
    g.initializers["axis1"] = Tensor::int64Vector({1});
  }
  g.nodes.push_back(makeNode("Conv", {"x", "wf", "bf"}, {"f"}));
  g.nodes.push_back(withInt(makeNode("Split", {"f", "sizes"}, {"q", "ctx", "gates"}), "axis", 1));
  g.nodes.push_back(
      withInts(withInt(makeNode("Conv", {"ctx", "wd"}, {"d"}), "group", c), "pads", {1, 1, 1, 1}));
  g.nodes.push_back(makeNode("Relu", {"d"}, {"dr"}));
  g.nodes.push_back(makeNode("Slice", {"gates", "start0", "end0", "axis1"}, {"g0"}));
  g.nodes.push_back(makeNode("Slice", {"gates", "start1", "end1", "axis1"}, {"g1"}));
  g.nodes.push_back(makeNode("Mul", {"dr", "g0"}, {"local"}));
  g.nodes.push_back(
      withInt(withInts(makeNode("ReduceMean", {"dr"}, {"global"}), "axes", {2, 3}), "keepdims", 1));
  g.nodes.push_back(makeNode("Mul", {"global", "g1"}, {"globalGated"}));
  g.nodes.push_back(makeNode("Add", {"local", "globalGated"}, {"all"}));
  g.nodes.push_back(makeNode("Conv", {"all", "wh"}, {"mod"}));
  g.nodes.push_back(makeNode("Mul", {"q", "mod"}, {"out"}));
  g.nodes.push_back(makeNode("Conv", {"out", "wp"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  const Network nhwc = channelsLast(net);
  EXPECT_EQ(countOps(nhwc, "Transpose"), 2);
  std::vector<int64_t> offsets;
  for (const Node& n : nhwc.graph.nodes) {
    if (n.opType == "Split") EXPECT_EQ(n.attrInt("axis", -1), 3);
    if (n.opType != "StridedCopy") continue;
    offsets.push_back(n.attrInt("offset", -1));
    EXPECT_EQ(n.attrInts("shape"), (std::vector<int64_t>{2, 5, 6, 1}));
    // f's NHWC strides: a sample 5 * 6 * 10, a row 6 * 10, a pixel's 10 channels; the one gate
    // channel does not step.
    EXPECT_EQ(n.attrInts("strides"), (std::vector<int64_t>{300, 60, 2 * c + 2, 0}));
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<int64_t>{2 * c, 2 * c + 1}));  // gates 0 and 1 of a pixel
  expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 4, 5, 6}, 11, -2, 2), 1);
}

// A StridedCopy that reads every other channel from the second on, rows 1..3 and every other
// column of a region value follows it with its geometry rewritten for NHWC storage; one whose
// read crosses from one axis into the next (a W dim that runs past the row) stays
// channels-first behind a reformat. Both give the channels-first graph's outputs.
TEST(ChannelsLastLayout, StridedCopyBoxFollowsTheRegion) {
  struct Case {
    std::vector<int64_t> shape, strides;
    int64_t offset;
    bool follows;
  };
  // x [2, 6, 4, 5] (CHW 120, HW 20, W 5).
  const Case cases[] = {{{2, 3, 3, 3}, {120, 40, 5, 2}, 20 + 5, true},
                        {{2, 1, 2, 8}, {120, 20, 5, 1}, 0, false}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.follows ? "box" : "crossing read");
    Network net;
    net.opsets[""] = 17;
    net.opsets[kKilnDomain] = 1;
    Graph& g = net.graph;
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(6), DimExpr(4), DimExpr(5)}}};
    g.initializers["w0"] = randomTensor(DataType::kFloat32, {6, 6, 1, 1}, 1);
    g.initializers["w1"] = randomTensor(DataType::kFloat32, {2, k.shape[1], 1, 1}, 2);
    g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}));
    Node copy = makeNode("StridedCopy", {"c0"}, {"s"});
    copy.domain = kKilnDomain;
    copy.opset = 1;
    copy = withInts(withInts(copy, "shape", k.shape), "strides", k.strides);
    g.nodes.push_back(withInt(copy, "offset", k.offset));
    g.nodes.push_back(makeNode("Conv", {"s", "w1"}, {"y"}));
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    const Network nhwc = channelsLast(net);
    EXPECT_EQ(countOps(nhwc, "Transpose"), k.follows ? 2 : 4);
    expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 6, 4, 5}, 3, -2, 2), 1);
  }
}

// TResNet's anti-aliased downsampling (timm's BlurPool): a reflect Pad of a region value, then a
// stride-2 depthwise blur whose filter is a Constant node. The Pad follows the region with its
// pads permuted (pads given for every axis), or its axes permuted (opset 18's axes input); the
// blur qualifies like a filter initializer; only x's and y's reformats are left.
TEST(ChannelsLastLayout, ReflectPadAndConstantNodeFilterStayInTheRegion) {
  for (int form = 0; form < 3; ++form) {
    const bool byAxes = form == 1, asAttribute = form == 2;
    SCOPED_TRACE(byAxes        ? "pads along axes 2, 3"
                 : asAttribute ? "pads as an attribute (opset 9)"
                               : "pads for every axis");
    const int opset = byAxes ? 18 : asAttribute ? 9 : 17;
    Network net;
    net.opsets[""] = opset;
    Graph& g = net.graph;
    g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(6), DimExpr(7)}}};
    g.initializers["w0"] = randomTensor(DataType::kFloat32, {4, 4, 1, 1}, 1);
    g.initializers["w1"] = randomTensor(DataType::kFloat32, {3, 4, 1, 1}, 2);
    if (byAxes) {
      g.initializers["pads"] = Tensor::int64Vector({1, 2, 1, 0});
      g.initializers["axes"] = Tensor::int64Vector({2, -1});
    } else if (!asAttribute) {
      g.initializers["pads"] = Tensor::int64Vector({0, 0, 1, 2, 0, 0, 1, 0});
    }
    Node blur = makeNode("Constant", {}, {"blur"}, opset);
    Attribute value;
    value.kind = Attribute::Kind::kTensor;
    value.t = randomTensor(DataType::kFloat32, {4, 1, 3, 3}, 3, 0.05, 0.2);
    blur.attributes["value"] = value;
    g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}, opset));
    Node pad = makeNode("Pad", {"c0", "pads"}, {"p"}, opset);
    if (byAxes) pad.inputs = {"c0", "pads", "", "axes"};
    if (asAttribute) {
      pad.inputs = {"c0"};
      pad = withInts(pad, "pads", {0, 0, 1, 2, 0, 0, 1, 0});
    }
    g.nodes.push_back(withString(pad, "mode", "reflect"));
    g.nodes.push_back(blur);
    g.nodes.push_back(
        withInts(withInt(withInts(makeNode("Conv", {"p", "blur"}, {"b"}, opset), "strides", {2, 2}),
                         "group", 4),
                 "kernel_shape", {3, 3}));
    g.nodes.push_back(makeNode("Conv", {"b", "w1"}, {"y"}, opset));
    g.outputs = {{"y", DataType::kFloat32, false, {}}};
    const Network nhwc = channelsLast(net);
    EXPECT_EQ(countOps(nhwc, "Transpose"), 2);
    EXPECT_EQ(countOps(nhwc, "Constant"), 0);  // its filter is an initializer now, stored KRSC
    // The channels-first pads (or axes) no node reads any more are gone; pads counted along
    // named axes stay as they are.
    EXPECT_EQ(nhwc.graph.initializers.count("pads"), byAxes ? 1u : 0u);
    EXPECT_EQ(nhwc.graph.initializers.count("axes"), 0u);
    for (const Node& n : nhwc.graph.nodes) {
      if (n.opType != "Pad") continue;
      std::vector<int64_t> values = n.attrInts("pads");
      if (!asAttribute) {
        const Tensor& permuted = nhwc.graph.initializers.at(n.inputs[byAxes ? 3 : 1]);
        for (int64_t k = 0; k < permuted.numel(); ++k) values.push_back(permuted.valueAsInt64(k));
      }
      const std::vector<int64_t> want =
          byAxes ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0, 1, 2, 0, 0, 1, 0, 0};
      EXPECT_EQ(values, want);
    }
    expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 4, 6, 7}, 4, -2, 2), 1);
  }
}

// A following Split one of whose outputs is also a graph output: that output gets its own
// reformat back to NCHW (and keeps its name), the other feeds a convolution NHWC.
TEST(ChannelsLastLayout, FollowingSplitReformatsAnOutputReadChannelsFirst) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(3), DimExpr(5)}}};
  g.initializers["w0"] = randomTensor(DataType::kFloat32, {8, 4, 1, 1}, 1);
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {2, 5, 3, 3}, 2);
  g.initializers["sizes"] = Tensor::int64Vector({3, 5});
  g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"c0"}));
  g.nodes.push_back(withInt(makeNode("Split", {"c0", "sizes"}, {"a", "b"}), "axis", 1));
  g.nodes.push_back(withInts(makeNode("Conv", {"b", "w1"}, {"y"}), "pads", {1, 1, 1, 1}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}, {"a", DataType::kFloat32, false, {}}};
  const Network nhwc = channelsLast(net);
  ASSERT_EQ(countOps(nhwc, "Split"), 1);
  for (const Node& n : nhwc.graph.nodes)
    if (n.opType == "Split") EXPECT_EQ(n.attrInt("axis", -1), 3);
  EXPECT_EQ(countOps(nhwc, "Transpose"), 3);  // x in, a and y back
  expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 4, 3, 5}, 3, -2, 2), 2);
}

// MobileViTv2's separable attention: the Split's outputs feed elementwise ops and a reduction,
// no region layer: the Split stays channels-first (one reformat of its input instead of one
// per output).
TEST(ChannelsLastLayout, SplitFeedingNoRegionLayerStaysChannelsFirst) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4), DimExpr(3), DimExpr(5)}}};
  g.initializers["w0"] = randomTensor(DataType::kFloat32, {9, 4, 1, 1}, 1);
  g.initializers["w1"] = randomTensor(DataType::kFloat32, {4, 4, 1, 1}, 2);
  g.initializers["sizes"] = Tensor::int64Vector({1, 4, 4});
  g.initializers["last"] = Tensor::int64Vector({-1});
  g.nodes.push_back(makeNode("Conv", {"x", "w0"}, {"qkv"}));
  g.nodes.push_back(withInt(makeNode("Split", {"qkv", "sizes"}, {"q", "k", "v"}), "axis", 1));
  g.nodes.push_back(withInt(makeNode("Softmax", {"q"}, {"scores"}), "axis", -1));
  g.nodes.push_back(makeNode("Mul", {"k", "scores"}, {"ks"}));
  g.nodes.push_back(makeNode("ReduceSum", {"ks", "last"}, {"context"}));
  g.nodes.push_back(makeNode("Relu", {"v"}, {"vr"}));
  g.nodes.push_back(makeNode("Mul", {"vr", "context"}, {"out"}));
  g.nodes.push_back(makeNode("Conv", {"out", "w1"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  const Network nhwc = channelsLast(net);
  ASSERT_EQ(countOps(nhwc, "Split"), 1);
  for (const Node& n : nhwc.graph.nodes)
    if (n.opType == "Split") EXPECT_EQ(n.attrInt("axis", -1), 1);
  // x's and qkv's reformats, out's to NHWC for the last convolution, y's back: none per output.
  EXPECT_EQ(countOps(nhwc, "Transpose"), 4);
  expectSameOutputs(net, nhwc, randomTensor(DataType::kFloat32, {2, 4, 3, 5}, 3, -2, 2), 1);
}

}  // namespace
}  // namespace kiln::test
