// The CPU executor computes a Constant layer once per backend (issue 26): later runs
// share the first run's storage, at the plan's precision, and a run at another
// precision recomputes it. A Shape layer likewise, for as long as its input keeps its
// dimensions.
#include <gtest/gtest.h>

#include "kiln/reference_backend.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr int64_t kSize = 1 << 16;

// y = x + c, with c a large float32 Constant of random values that float16 rounds.
Network constantGraph() {
  Network net;
  net.opsets[""] = 17;
  Node constant = makeNode("Constant", {}, {"c"});
  constant.attributes["value"].kind = Attribute::Kind::kTensor;
  constant.attributes["value"].t = randomTensor(DataType::kFloat32, {kSize}, 7);
  ValueInfo x{"x", DataType::kFloat32, true, {DimExpr(kSize)}};
  net.graph.inputs = {x};
  net.graph.nodes = {constant, makeNode("Add", {"x", "c"}, {"y"})};
  net.graph.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

ReferenceRunOptions planAt(DataType precision) {
  ReferenceRunOptions options;
  options.extraOutputs = {"c"};
  options.layerImplementations = {{"cpu.reference", precision, precision},
                                  {"cpu.reference", precision, precision}};
  return options;
}

Tensor runConstant(ReferenceBackend& backend, const ReferenceRunOptions& options) {
  std::map<std::string, Tensor> inputs{{"x", randomTensor(DataType::kFloat32, {kSize}, 3)}};
  std::vector<NamedTensor> outputs;
  EXPECT_TRUE(backend.run(inputs, &outputs, options).isOk());
  EXPECT_EQ(outputs.size(), 2u);
  return outputs.size() == 2 ? outputs[1].tensor : Tensor();
}

TEST(ConstantCache, LaterRunsShareTheFirstRunsStorage) {
  const Network net = constantGraph();
  const Tensor value = net.graph.nodes[0].attributes.at("value").t;
  ReferenceBackend backend(net);
  const ReferenceRunOptions fp16 = planAt(DataType::kFloat16);
  Tensor first = runConstant(backend, fp16);
  ASSERT_TRUE(first.defined());
  const Tensor rounded = castTensor(castTensor(value, DataType::kFloat16), DataType::kFloat32);
  int changed = 0;
  for (int64_t i = 0; i < kSize; ++i) {
    ASSERT_EQ(first.data<float>()[i], rounded.data<float>()[i]) << i;
    changed += first.data<float>()[i] != value.data<float>()[i];
  }
  EXPECT_GT(changed, kSize / 2);  // the float16 rounding did happen
  for (int run = 0; run < 3; ++run) {
    Tensor again = runConstant(backend, fp16);
    EXPECT_EQ(again.rawData(), first.rawData()) << "run " << run + 2 << " re-created the Constant";
  }
  // Another precision recomputes: float32 keeps the attribute's own values.
  Tensor full = runConstant(backend, planAt(DataType::kFloat32));
  ASSERT_TRUE(full.defined());
  EXPECT_NE(full.rawData(), first.rawData());
  for (int64_t i = 0; i < kSize; ++i) ASSERT_EQ(full.data<float>()[i], value.data<float>()[i]) << i;
}

// s = Shape(x), x of dynamic dims.
Network shapeGraph() {
  Network net;
  net.opsets[""] = 17;
  ValueInfo x{"x", DataType::kFloat32, true, {DimExpr::symbol("n"), DimExpr(3)}};
  net.graph.inputs = {x};
  net.graph.nodes = {makeNode("Shape", {"x"}, {"s"})};
  net.graph.outputs = {{"s", DataType::kInt64, false, {}}};
  return net;
}

Tensor runShape(ReferenceBackend& backend, int64_t rows, uint64_t seed) {
  std::map<std::string, Tensor> inputs{{"x", randomTensor(DataType::kFloat32, {rows, 3}, seed)}};
  std::vector<NamedTensor> outputs;
  EXPECT_TRUE(backend.run(inputs, &outputs, {}).isOk());
  EXPECT_EQ(outputs.size(), 1u);
  return outputs.size() == 1 ? outputs[0].tensor : Tensor();
}

TEST(ConstantCache, ShapeIsComputedOncePerInputDimensions) {
  const Network net = shapeGraph();
  ReferenceBackend backend(net);
  const Tensor first = runShape(backend, 4, 1);
  ASSERT_TRUE(first.defined());
  EXPECT_EQ(first.toInt64Vector(), (std::vector<int64_t>{4, 3}));
  // Other values, same dimensions: the same storage, not a new tensor per run.
  const Tensor again = runShape(backend, 4, 2);
  EXPECT_EQ(again.rawData(), first.rawData()) << "the second run re-created the Shape";
  // Other dimensions: recomputed.
  const Tensor wider = runShape(backend, 7, 3);
  EXPECT_NE(wider.rawData(), first.rawData());
  EXPECT_EQ(wider.toInt64Vector(), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(runShape(backend, 4, 4).toInt64Vector(), (std::vector<int64_t>{4, 3}));
}

}  // namespace
}  // namespace kiln::test
