// remove_no_op_nodes: each no-op form goes (its reader reads the input), a graph
// output keeps its name, and the look-alikes that change values stay. Every graph
// runs with and without the pipeline on the CPU reference (fuseAndCompareOutputs).
#include <gtest/gtest.h>

#include <limits>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "remove_no_op_nodes";

// x [2, 3, 4] (or [N, 3, 4] when `symbolicBatch`) -> Relu -> r -> `middle` (reads r,
// writes n) -> Sigmoid -> y. Constants for the no-op operands are initializers.
Network around(const std::vector<Node>& middle, bool symbolicBatch = false) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {{"x",
               DataType::kFloat32,
               true,
               {symbolicBatch ? DimExpr::symbol("N") : DimExpr(2), DimExpr(3), DimExpr(4)}}};
  g.initializers["zeros4"] = floatTensor({4}, {0.f, 0.f, 0.f, 0.f});
  g.initializers["zero"] = floatTensor({}, {0.f});
  g.initializers["one"] = floatTensor({}, {1.f});
  g.initializers["ones1"] = floatTensor({1}, {1.f});
  g.initializers["almost_zero"] = floatTensor({4}, {0.f, 0.f, 1e-3f, 0.f});
  g.initializers["zeros5x1x1x1"] = Tensor(DataType::kFloat32, {5, 1, 1, 1});
  g.initializers["same_shape"] = int64Tensor({3}, {2, 3, 4});
  g.initializers["keep_dims"] = int64Tensor({3}, {0, 3, 4});
  g.initializers["other_shape"] = int64Tensor({3}, {3, 2, 4});
  g.initializers["expand_to"] = int64Tensor({2}, {3, 4});
  g.initializers["zero_pads"] = int64Tensor({6}, {0, 0, 0, 0, 0, 0});
  g.initializers["one_pad"] = int64Tensor({6}, {0, 0, 1, 0, 0, 0});
  g.initializers["start0"] = int64Tensor({1}, {0});
  g.initializers["end_max"] = int64Tensor({1}, {std::numeric_limits<int64_t>::max()});
  g.initializers["start_last"] = int64Tensor({1}, {-1});
  g.initializers["end_min"] = int64Tensor({1}, {std::numeric_limits<int64_t>::min()});
  g.initializers["axis1"] = int64Tensor({1}, {1});
  g.initializers["step1"] = int64Tensor({1}, {1});
  g.initializers["step_back"] = int64Tensor({1}, {-1});
  g.initializers["ratio"] = floatTensor({}, {0.f});
  g.initializers["unit_scales"] = floatTensor({3}, {1.f, 1.f, 1.f});
  g.initializers["wider_scales"] = floatTensor({3}, {1.f, 1.f, 1.5f});
  g.initializers["no_scales"] = Tensor(DataType::kFloat32, {0});
  g.initializers["roi"] = floatTensor({6}, {0.f, 0.f, 0.25f, 1.f, 1.f, 0.75f});
  g.initializers["train_off"] = Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{0});
  g.initializers["train_on"] = Tensor::fromVector(DataType::kBool, {}, std::vector<uint8_t>{1});
  g.nodes = {makeNode("Relu", {"x"}, {"r"})};
  for (const Node& n : middle) g.nodes.push_back(n);
  g.nodes.push_back(makeNode("Sigmoid", {"n"}, {"y"}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

NetworkRunner runner(int64_t batch = 2) {
  return [batch](const Network& net) {
    return runOnReference(net,
                          {{"x", randomTensor(DataType::kFloat32, {batch, 3, 4}, 1, -2.0, 2.0)}});
  };
}

// The pipeline removes exactly the no-op `middle` node: Relu and Sigmoid remain.
void expectRemoved(const Node& middle, bool symbolicBatch = false) {
  SCOPED_TRACE(middle.opType);
  Network fused;
  auto applied = fuseAndCompareOutputs(kPass, runner(), around({middle}, symbolicBatch), 2, &fused);
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].nodes, std::vector<std::string>{middle.name});
  EXPECT_EQ(fused.graph.nodes[1].inputs, std::vector<std::string>{"r"});
}

void expectKept(const Node& middle, bool symbolicBatch = false) {
  SCOPED_TRACE(middle.opType);
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(), around({middle}, symbolicBatch), 3).empty());
}

TEST(RemoveNoOpNodes, IdentityDropoutAndSameTypeCast) {
  expectRemoved(makeNode("Identity", {"r"}, {"n"}));
  expectRemoved(makeNode("Dropout", {"r"}, {"n"}));
  expectRemoved(makeNode("Dropout", {"r"}, {"n", "unread_mask"}));
  expectRemoved(makeNode("Dropout", {"r", "ratio", "train_off"}, {"n"}));
  expectRemoved(makeNode("Dropout", {"r"}, {"n"}, 10));  // ratio attribute era
  expectRemoved(withInt(makeNode("Cast", {"r"}, {"n"}), "to", 1));
  expectRemoved(makeNode("CastLike", {"r", "one"}, {"n"}));
}

TEST(RemoveNoOpNodes, SameShapeReshapesAndIdentityTranspose) {
  expectRemoved(makeNode("Reshape", {"r", "same_shape"}, {"n"}));
  expectRemoved(makeNode("Reshape", {"r", "keep_dims"}, {"n"}));
  expectRemoved(makeNode("Squeeze", {"r"}, {"n"}));  // no dim of 1 to drop
  expectRemoved(makeNode("Expand", {"r", "expand_to"}, {"n"}));
  expectRemoved(withInts(makeNode("Transpose", {"r"}, {"n"}), "perm", {0, 1, 2}));
  // A symbolic batch: Reshape(r, [0, 3, 4]) is [N, 3, 4] for every N.
  expectRemoved(makeNode("Reshape", {"r", "keep_dims"}, {"n"}), true);
}

TEST(RemoveNoOpNodes, NeutralArithmeticZeroPadAndFullSlice) {
  expectRemoved(makeNode("Add", {"r", "zeros4"}, {"n"}));
  expectRemoved(makeNode("Add", {"zero", "r"}, {"n"}));
  expectRemoved(makeNode("Sub", {"r", "zero"}, {"n"}));
  expectRemoved(makeNode("Mul", {"one", "r"}, {"n"}));
  expectRemoved(makeNode("Div", {"r", "ones1"}, {"n"}));
  expectRemoved(makeNode("Pad", {"r", "zero_pads"}, {"n"}));
  expectRemoved(withInts(makeNode("Pad", {"r"}, {"n"}, 2), "pads", {0, 0, 0, 0, 0, 0}));
  expectRemoved(makeNode("Slice", {"r", "start0", "end_max", "axis1"}, {"n"}));
  expectRemoved(makeNode("Slice", {"r", "start0", "end_max", "axis1", "step1"}, {"n"}));
}

TEST(RemoveNoOpNodes, SameSizeResize) {
  expectRemoved(withString(makeNode("Resize", {"r", "", "unit_scales"}, {"n"}), "mode", "linear"));
  expectRemoved(makeNode("Resize", {"r", "", "no_scales", "same_shape"}, {"n"}));
  expectRemoved(
      withString(makeNode("Resize", {"r", "", "", "same_shape"}, {"n"}), "mode", "cubic"));
  // Another size, and a crop that keeps the size but not the values, stay.
  expectKept(withString(makeNode("Resize", {"r", "", "wider_scales"}, {"n"}), "mode", "linear"));
  Node crop =
      withString(makeNode("Resize", {"r", "roi", "", "same_shape"}, {"n"}), "mode", "linear");
  expectKept(withString(crop, "coordinate_transformation_mode", "tf_crop_and_resize"));
  // tf_half_pixel_for_nn with a nearest ceil reads position y + 1 at scale 1.
  Node shifted = withString(makeNode("Resize", {"r", "", "unit_scales"}, {"n"}), "mode", "nearest");
  shifted = withString(shifted, "nearest_mode", "ceil");
  expectKept(withString(shifted, "coordinate_transformation_mode", "tf_half_pixel_for_nn"));
}

TEST(RemoveNoOpNodes, LookAlikesThatChangeValuesStay) {
  expectKept(makeNode("Add", {"r", "almost_zero"}, {"n"}));
  expectKept(makeNode("Sub", {"zero", "r"}, {"n"}));  // 0 - r = -r
  expectKept(makeNode("Div", {"one", "r"}, {"n"}));   // 1 / r
  expectKept(makeNode("Mul", {"r", "zero"}, {"n"}));
  expectKept(withInt(makeNode("Cast", {"r"}, {"n"}), "to", 11));  // to float64
  expectKept(makeNode("Reshape", {"r", "other_shape"}, {"n"}));
  expectKept(withInts(makeNode("Transpose", {"r"}, {"n"}), "perm", {0, 2, 1}));
  expectKept(makeNode("Pad", {"r", "one_pad"}, {"n"}));
  // A reversing slice keeps the shape but not the order.
  expectKept(makeNode("Slice", {"r", "start_last", "end_min", "axis1", "step_back"}, {"n"}));
  // Training-mode Dropout (ratio 0, so both runs agree) is not an identity here.
  expectKept(makeNode("Dropout", {"r", "ratio", "train_on"}, {"n"}));
}

TEST(RemoveNoOpNodes, BroadcastGrowthAndReadMasksStay) {
  // x + 0 with a [5, 1, 1, 1] zero broadcasts to [5, 2, 3, 4]: not x.
  expectKept(makeNode("Add", {"r", "zeros5x1x1x1"}, {"n"}));
  Network mask = around({makeNode("Dropout", {"r"}, {"n", "mask"})});
  mask.graph.outputs.push_back({"mask", DataType::kBool, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(), mask, 3).empty());
}

TEST(RemoveNoOpNodes, GraphOutputKeepsItsName) {
  // Relu -> Identity -> y: the Relu writes y itself.
  Network net = around({makeNode("Identity", {"r"}, {"n"})});
  net.graph.nodes.pop_back();
  net.graph.nodes.back().outputs = {"y"};
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kPass, runner(), net, 1, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[0].opType, "Relu");
  EXPECT_EQ(fused.graph.nodes[0].outputs, std::vector<std::string>{"y"});
  // The Relu's output read elsewhere too: renaming it would lose that reader's value.
  Network shared = net;
  shared.graph.outputs.push_back({"r", DataType::kFloat32, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(), shared, 2).empty());
  // x -> Identity -> y: a graph input cannot be renamed, so the Identity stays.
  Network passThrough = net;
  passThrough.graph.nodes = {makeNode("Identity", {"x"}, {"y"})};
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, runner(), passThrough, 1).empty());
}

// An LSTM's initial_h and initial_c of zeros are left out (the op's default); a state that is
// not all zeros stays. r [2, 3, 4] is the sequence: 2 steps, batch 3, 4 features, hidden 5.
TEST(RemoveNoOpNodes, ZeroInitialStatesOfARecurrentLayer) {
  auto lstm = [](const char* initialH) {
    Network net = around({withString(
        withInt(makeNode("LSTM", {"r", "lstm_w", "lstm_r", "lstm_b", "", initialH, "zero_state"},
                         {"n"}),
                "hidden_size", 5),
        "direction", "forward")});
    Graph& g = net.graph;
    g.initializers["lstm_w"] = randomTensor(DataType::kFloat32, {1, 20, 4}, 11);
    g.initializers["lstm_r"] = randomTensor(DataType::kFloat32, {1, 20, 5}, 12);
    g.initializers["lstm_b"] = randomTensor(DataType::kFloat32, {1, 40}, 13);
    g.initializers["zero_state"] = Tensor(DataType::kFloat32, {1, 3, 5});
    g.initializers["some_state"] = randomTensor(DataType::kFloat32, {1, 3, 5}, 14);
    return net;
  };
  Network fused;
  ASSERT_EQ(fuseAndCompareOutputs(kPass, runner(), lstm("zero_state"), 3, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[1].inputs,
            (std::vector<std::string>{"r", "lstm_w", "lstm_r", "lstm_b"}));
  // initial_h random: only initial_c goes.
  ASSERT_EQ(fuseAndCompareOutputs(kPass, runner(), lstm("some_state"), 3, &fused).size(), 1u);
  EXPECT_EQ(fused.graph.nodes[1].inputs,
            (std::vector<std::string>{"r", "lstm_w", "lstm_r", "lstm_b", "", "some_state"}));
}

TEST(RemoveNoOpNodes, ChainsGoAtOnceAndTheNameDisablesIt) {
  Network chain = around({makeNode("Identity", {"r"}, {"i"}), makeNode("Add", {"i", "zero"}, {"a"}),
                          withInt(makeNode("Cast", {"a"}, {"n"}), "to", 1)});
  EXPECT_EQ(fuseAndCompareOutputs(kPass, runner(), chain, 2).size(), 3u);
  Network off = chain;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(off, 1, {kPass}, &applied).isOk());
  EXPECT_EQ(off.graph.nodes.size(), 5u);
}

}  // namespace
}  // namespace kiln::test
