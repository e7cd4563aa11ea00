// fold_transpose_into_strided_copy: a Transpose of a StridedCopy's output becomes the copy with
// its dims permuted (one copy, the outputs the CPU reference's); a fold that would turn a copy
// of contiguous innermost runs into a gather, or a copy whose output is read elsewhere too,
// stays.
#include <gtest/gtest.h>

#include "engine/passes/pass_test_support.h"
#include "kiln/passes.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "fold_transpose_into_strided_copy";

// y = Transpose(StridedCopy(x [2, 6, 4]; shape, strides, offset 4), (0, 2, 1)); `tapCopy`: the
// copy is a graph output too.
Network copyThenTranspose(const Shape& shape, const std::vector<int64_t>& strides, bool tapCopy) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x", DataType::kFloat32, true, constantDims({2, 6, 4})}};
  Node copy = withInt(withInts(withInts(makeNode("StridedCopy", {"x"}, {"c"}, 1), "shape", shape),
                               "strides", strides),
                      "offset", 4);
  copy.domain = kKilnDomain;
  g.nodes.push_back(copy);
  g.nodes.push_back(withInts(makeNode("Transpose", {"c"}, {"y"}), "perm", {0, 2, 1}));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  if (tapCopy) g.outputs.push_back({"c", DataType::kFloat32, false, {}});
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

TEST(FoldTransposeIntoStridedCopy, OneCopyWithItsDimsPermuted) {
  // The copy gathers along its innermost dim (stride 5); transposed, its innermost dim reads
  // contiguous elements: [2, 3, 4] with strides [24, 5, 1].
  Network fused;
  auto applied =
      fuseAndCompareOutputs(kPass, run, copyThenTranspose({2, 4, 3}, {20, 1, 5}, false), 1, &fused);
  ASSERT_EQ(applied.size(), 1u);
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  const Node& copy = fused.graph.nodes[0];
  EXPECT_EQ(copy.attrInts("shape"), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(copy.attrInts("strides"), (std::vector<int64_t>{20, 5, 1}));
  EXPECT_EQ(copy.outputs, std::vector<std::string>{"y"});
  // Both gather: one copy still beats two.
  EXPECT_EQ(
      fuseAndCompareOutputs(kPass, run, copyThenTranspose({2, 2, 3}, {20, 2, 6}, false), 1).size(),
      1u);
}

TEST(FoldTransposeIntoStridedCopy, CopiesThatMustStayStay) {
  // Contiguous innermost runs (strides [24, 8, 1]) would become a gather of stride 8.
  EXPECT_TRUE(fuseAndCompareOutputs(kPass, run, copyThenTranspose({2, 2, 4}, {20, 8, 1}, false), 2)
                  .empty());
  // The copy's output is a graph output too.
  EXPECT_TRUE(
      fuseAndCompareOutputs(kPass, run, copyThenTranspose({2, 4, 3}, {20, 1, 5}, true), 2).empty());
}

}  // namespace
}  // namespace kiln::test
