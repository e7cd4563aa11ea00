#include "engine/passes/pass_test_support.h"

#include <gtest/gtest.h>

#include "support/op_test.h"

namespace kiln::test {

std::vector<NamedTensor> runOnReference(const Network& network,
                                        const std::map<std::string, Tensor>& inputs) {
  std::vector<NamedTensor> out;
  Status s = ReferenceBackend(network).run(inputs, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

std::map<std::string, Tensor> randomFloatInputs(const Network& network) {
  std::map<std::string, Tensor> feeds;
  uint64_t seed = 1;
  for (const ValueInfo& in : network.graph.inputs) {
    Shape s;
    for (const DimExpr& d : in.shape) s.push_back(d.constValue());
    feeds[in.name] = randomTensor(DataType::kFloat32, s, seed++);
  }
  return feeds;
}

std::vector<DimExpr> constantDims(const Shape& shape) {
  std::vector<DimExpr> dims;
  for (int64_t v : shape) dims.push_back(DimExpr(v));
  return dims;
}

int countOps(const Network& network, const std::string& op) {
  int n = 0;
  for (const Node& node : network.graph.nodes) n += node.opType == op;
  return n;
}

std::vector<PassApplication> fuseAndCompareOutputs(const std::string& pass,
                                                   const NetworkRunner& run,
                                                   const Network& original, size_t expectedNodes,
                                                   Network* fusedOut,
                                                   const std::vector<std::string>& disabled) {
  Network fused = original;
  std::vector<PassApplication> applied;
  Status s = runPasses(fused, 1, disabled, &applied);
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(fused.graph.nodes.size(), expectedNodes);
  const auto expected = run(original);
  const auto actual = run(fused);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    expectTensorNear(actual[i].tensor, expected[i].tensor, 1e-5, 1e-5);
  }
  std::vector<PassApplication> mine;
  for (const PassApplication& a : applied)
    if (a.pass == pass) mine.push_back(a);
  if (fusedOut) *fusedOut = std::move(fused);
  return mine;
}

}  // namespace kiln::test
