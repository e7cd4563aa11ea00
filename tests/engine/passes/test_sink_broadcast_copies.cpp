// sink_broadcast_copies: transformers 5's SDPA mask (And of an all-true query column and the
// key padding row, a Where per layer, added to each layer's scores) becomes the key row
// [B, 1, 1, S] that every layer's Add broadcasts, with no And, no Expand and no [B, 1, S, S]
// copy left; every identity constant the pass knows (And true, Or false, Mul 1, Div 1, Sub 0)
// does the same; Add 0 (not an identity for -0), a constant with one non-identity element, a
// copy a non-broadcasting op reads and a copy that is a graph output stay. Every rewritten
// graph's outputs are the CPU reference's on the original graph.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "sink_broadcast_copies";
constexpr int64_t kB = 2, kH = 3, kS = 6;

// keys [B, 1, 1, S] > 0 is the padding row; `op`(row, c) with c [1, 1, S, 1] all `identity`
// (the constant on the left for And, as transformers writes it) broadcasts it to
// [B, 1, S, S]; `layers` Wheres (0 / -10000) each added to that layer's scores [B, H, S, S],
// then a softmax per layer.
Network maskGraph(const std::string& op, float identity, int layers = 2, bool constantFirst = true,
                  bool boolRow = true) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  auto dimsOf = [](const Shape& s) {
    std::vector<DimExpr> d;
    for (int64_t v : s) d.push_back(DimExpr(v));
    return d;
  };
  g.inputs.push_back({"keys", DataType::kFloat32, true, dimsOf({kB, 1, 1, kS})});
  Tensor c(boolRow ? DataType::kBool : DataType::kFloat32, {1, 1, kS, 1});
  for (int64_t i = 0; i < kS; ++i) {
    if (boolRow)
      c.data<bool>()[i] = identity != 0.f;
    else
      c.data<float>()[i] = identity;
  }
  g.initializers["column"] = c;
  g.initializers["zero"] = Tensor::scalarFloat(0.f);
  g.initializers["masked"] = Tensor::scalarFloat(-10000.f);
  g.nodes.push_back(makeNode("Greater", {"keys", "zero"}, {"row"}));
  std::string rowValue = "row";
  if (!boolRow) {  // a float row of 0 / 1 for the arithmetic identities
    g.nodes.push_back(withInt(makeNode("Cast", {"row"}, {"row_f"}), "to", 1));
    rowValue = "row_f";
  }
  g.nodes.push_back(makeNode(op,
                             constantFirst ? std::vector<std::string>{"column", rowValue}
                                           : std::vector<std::string>{rowValue, "column"},
                             {"square"}));
  std::string cond = "square";
  if (!boolRow) {  // back to a condition
    g.nodes.push_back(makeNode("Greater", {"square", "zero"}, {"square_b"}));
    cond = "square_b";
  }
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    g.inputs.push_back({"scores" + n, DataType::kFloat32, true, dimsOf({kB, kH, kS, kS})});
    g.nodes.push_back(makeNode("Where", {cond, "zero", "masked"}, {"mask" + n}));
    g.nodes.push_back(makeNode("Add", {"scores" + n, "mask" + n}, {"logits" + n}));
    g.nodes.push_back(withInt(makeNode("Softmax", {"logits" + n}, {"p" + n}), "axis", -1));
    g.outputs.push_back({"p" + n, DataType::kFloat32, false, {}});
  }
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  std::map<std::string, Tensor> feeds = {
      {"keys", randomTensor(DataType::kFloat32, {kB, 1, 1, kS}, 3)}};
  for (const auto& in : net.graph.inputs)
    if (in.name.rfind("scores", 0) == 0)
      feeds[in.name] = randomTensor(DataType::kFloat32, {kB, kH, kS, kS}, 9 + in.name.size());
  return runOnReference(net, feeds);
}

// The shape of `value` in `net` (inferred), as numbers.
Shape shapeIn(const Network& net, const std::string& value) {
  auto inferred = inferShapes(net);
  EXPECT_TRUE(inferred.isOk()) << inferred.status().toString();
  Shape out;
  if (!inferred.isOk() || !inferred.value().values.count(value)) return out;
  for (const DimExpr& d : inferred.value().values.at(value).shape) out.push_back(d.constValue());
  return out;
}

TEST(SinkBroadcastCopies, SdpaMaskBecomesTheKeyRow) {
  Network fused;
  const std::vector<PassApplication> applied =
      fuseAndCompareOutputs(kPass, run, maskGraph("And", 1.f), 4, &fused);
  // The And as an Expand, then the Expand below each layer's Where; left: the row's
  // Greater, one Where and each layer's Add + Softmax as one ScaledMaskedSoftmax.
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_EQ(countOps(fused, "And"), 0);
  EXPECT_EQ(countOps(fused, "Expand"), 0);
  // One Where (the layers' copies merged) of the row, [B, 1, 1, S].
  ASSERT_EQ(countOps(fused, "Where"), 1);
  for (const Node& n : fused.graph.nodes) {
    if (n.opType != "Where") continue;
    EXPECT_EQ(n.inputs[0], "row");
    EXPECT_EQ(shapeIn(fused, n.outputs[0]), (Shape{kB, 1, 1, kS}));
  }
}

TEST(SinkBroadcastCopies, EveryIdentityConstant) {
  struct Case {
    const char* op;
    float identity;
    bool constantFirst, boolRow;
  };
  for (const Case& c : {Case{"And", 1.f, false, true}, Case{"Or", 0.f, true, true},
                        Case{"Mul", 1.f, true, false}, Case{"Mul", 1.f, false, false},
                        Case{"Div", 1.f, false, false}, Case{"Sub", 0.f, false, false}}) {
    SCOPED_TRACE(std::string(c.op) + (c.constantFirst ? " constant first" : " constant second"));
    Network net = maskGraph(c.op, c.identity, 2, c.constantFirst, c.boolRow);
    Network fused;
    // The row's Greater (and its Cast, and the Greater back to a condition), one Where,
    // each layer's Add + Softmax as one node.
    const size_t nodes = c.boolRow ? 4 : 6;
    const std::vector<PassApplication> applied =
        fuseAndCompareOutputs(kPass, run, net, nodes, &fused);
    EXPECT_FALSE(applied.empty());
    EXPECT_EQ(countOps(fused, c.op), 0);
    EXPECT_EQ(countOps(fused, "Expand"), 0);
  }
}

TEST(SinkBroadcastCopies, CopiesThatMustStayStay) {
  // Add(x, 0) turns -0 into +0: not an identity; nothing moves.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, maskGraph("Add", 0.f, 2, false, false), 7).empty());
  // One element of the constant is not the identity.
  Network notAll = maskGraph("And", 1.f);
  notAll.graph.initializers["column"].data<bool>()[2] = false;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, notAll, 5).empty());
  // A Softmax reads the square mask itself: it needs the copy.
  Network softmaxReader = maskGraph("And", 1.f, 1);
  softmaxReader.graph.nodes.push_back(
      withInt(makeNode("Softmax", {"mask0"}, {"direct"}), "axis", -1));
  softmaxReader.graph.outputs.push_back({"direct", DataType::kFloat32, false, {}});
  Network fused;
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, softmaxReader, 5, &fused).empty());
  EXPECT_EQ(shapeIn(fused, "mask0"), (Shape{kB, 1, kS, kS}));
  // The square mask is a graph output: it stays that shape.
  Network output = maskGraph("And", 1.f, 1);
  output.graph.outputs.push_back({"square", DataType::kBool, false, {}});
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, output, 4, &fused).empty());
  EXPECT_EQ(shapeIn(fused, "square"), (Shape{kB, 1, kS, kS}));
}

}  // namespace
}  // namespace kiln::test
