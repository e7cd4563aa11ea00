// fold_batch_norm: Conv (or ConvTranspose, grouped too) + BatchNormalization becomes
// one convolution with folded weights;
// outputs equal the unfolded graph's on random data, on a graph built here and on
// the PP-OCR classifier (Paddle exports keep their BatchNormalization nodes).
#include <gtest/gtest.h>

#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

// x [2, 3, 9, 9] -> Conv(W [4, 3, 3, 3], B?) -> BatchNormalization -> y.
Network convBn(bool withBias, int64_t trainingMode = 0) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(3), DimExpr(9), DimExpr(9)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 3, 3, 3}, 1);
  g.initializers["scale"] = randomTensor(DataType::kFloat32, {4}, 2, 0.5, 1.5);
  g.initializers["shift"] = randomTensor(DataType::kFloat32, {4}, 3);
  g.initializers["mean"] = randomTensor(DataType::kFloat32, {4}, 4);
  g.initializers["var"] = randomTensor(DataType::kFloat32, {4}, 5, 0.2, 2.0);
  Node conv;
  conv.name = "conv";
  conv.opType = "Conv";
  conv.opset = 17;
  conv.inputs = {"x", "w"};
  if (withBias) {
    g.initializers["b"] = randomTensor(DataType::kFloat32, {4}, 6);
    conv.inputs.push_back("b");
  }
  conv.outputs = {"c"};
  conv.attributes["pads"].kind = Attribute::Kind::kInts;
  conv.attributes["pads"].ints = {1, 1, 1, 1};
  Node bn;
  bn.name = "bn";
  bn.opType = "BatchNormalization";
  bn.opset = 17;
  bn.inputs = {"c", "scale", "shift", "mean", "var"};
  bn.outputs = {"y"};
  bn.attributes["epsilon"].kind = Attribute::Kind::kFloat;
  bn.attributes["epsilon"].f = 1e-3f;
  bn.attributes["training_mode"].kind = Attribute::Kind::kInt;
  bn.attributes["training_mode"].i = trainingMode;
  g.nodes = {conv, bn};
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

Tensor run(const Network& net, const std::string& input, const Tensor& x) {
  std::vector<NamedTensor> out;
  Status s = ReferenceBackend(net).run({{input, x}}, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out.empty() ? Tensor() : out[0].tensor;
}

TEST(FoldBatchNorm, ConvWithAndWithoutBias) {
  for (bool withBias : {false, true}) {
    SCOPED_TRACE(withBias);
    Network net = convBn(withBias);
    Network folded = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(folded, 3, {}, &applied).isOk());
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].layer, "conv + bn");
    ASSERT_EQ(folded.graph.nodes.size(), 1u);
    EXPECT_EQ(folded.graph.nodes[0].attrStrings(kSourceNodesAttribute),
              (std::vector<std::string>{"conv", "bn"}));
    EXPECT_TRUE(folded.graph.initializers.count("w"));  // the original weights are untouched
    const Tensor x = randomTensor(DataType::kFloat32, {2, 3, 9, 9}, 8);
    expectTensorNear(run(folded, "x", x), run(net, "x", x), 1e-5, 1e-4);
  }
}

// x [2, 4, 5, 5] -> ConvTranspose(W [4, 3, 3, 3], stride 2, group g) -> BN over its
// 3 * g output channels: each W[c, j] scales with output channel (c / (4/g)) * 3 + j.
TEST(FoldBatchNorm, ConvTransposeWithGroups) {
  for (int64_t group : {1, 2}) {
    SCOPED_TRACE(group);
    Network net = convBn(true);
    Graph& g = net.graph;
    const int64_t m = 3 * group;
    g.inputs[0].shape = {DimExpr(2), DimExpr(4), DimExpr(5), DimExpr(5)};
    g.initializers["w"] = randomTensor(DataType::kFloat32, {4, 3, 3, 3}, 11);
    g.initializers["b"] = randomTensor(DataType::kFloat32, {m}, 12);
    g.initializers["scale"] = randomTensor(DataType::kFloat32, {m}, 13, 0.5, 1.5);
    g.initializers["shift"] = randomTensor(DataType::kFloat32, {m}, 14);
    g.initializers["mean"] = randomTensor(DataType::kFloat32, {m}, 15);
    g.initializers["var"] = randomTensor(DataType::kFloat32, {m}, 16, 0.2, 2.0);
    Node& conv = g.nodes[0];
    conv.opType = "ConvTranspose";
    conv.attributes["strides"].kind = Attribute::Kind::kInts;
    conv.attributes["strides"].ints = {2, 2};
    conv.attributes["group"].kind = Attribute::Kind::kInt;
    conv.attributes["group"].i = group;
    Network folded = net;
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(folded, 3, {}, &applied).isOk());
    ASSERT_EQ(folded.graph.nodes.size(), 1u);
    EXPECT_EQ(folded.graph.nodes[0].opType, "ConvTranspose");
    const Tensor x = randomTensor(DataType::kFloat32, {2, 4, 5, 5}, 17);
    expectTensorNear(run(folded, "x", x), run(net, "x", x), 1e-5, 1e-4);
  }
}

TEST(FoldBatchNorm, TrainingModeAndDisabledPassAreLeftAlone) {
  Network training = convBn(true, 1);
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(training, 3, {}, &applied).isOk());
  EXPECT_TRUE(applied.empty());
  // With the fold off (and the BN's rewrite as X * s + t, which would take it next).
  Network net = convBn(true);
  ASSERT_TRUE(runPasses(net, 3, {"fold_batch_norm", "batch_norm_as_scale_shift"}, &applied).isOk());
  EXPECT_TRUE(applied.empty());
  EXPECT_EQ(net.graph.nodes.size(), 2u);
}

TEST(FoldBatchNorm, PaddleClassifierFoldsEveryConvBn) {
  auto imported = importOnnxFile(std::string(KILN_MODELS_DIR) + "/ppocr_mobile_v2_cls/model.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  int bns = 0;
  for (const Node& n : imported->graph.nodes) bns += n.opType == "BatchNormalization";
  Network folded = imported.value();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(folded, 3, {}, &applied).isOk());
  int folds = 0, left = 0;
  for (const PassApplication& a : applied) folds += a.pass == "fold_batch_norm";
  for (const Node& n : folded.graph.nodes) left += n.opType == "BatchNormalization";
  EXPECT_GT(bns, 20);
  EXPECT_EQ(folds, bns);
  EXPECT_EQ(left, 0);
  const Tensor x = randomTensor(DataType::kFloat32, {2, 3, 48, 192}, 9);
  expectTensorNear(run(folded, "x", x), run(imported.value(), "x", x), 1e-5, 1e-3);
}

}  // namespace
}  // namespace kiln::test
