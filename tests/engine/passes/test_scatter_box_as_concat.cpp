// scatter_box_as_concat: a ScatterND whose indices enumerate a box of its data in order becomes
// its updates (the whole data: MViTv2's relative positions without a class token) or Concats of
// the data's slices around them (a box from offset 1 on two axes: with a class token); the
// indices as the export builds them at run time (Concat of Unsqueezed Expands of Range-like
// constants) or folded to one constant. The outputs stay the CPU reference's; indices out of
// order, a reduction, or a box outside the data stay a ScatterND; indices of the first k < rank
// dims write boxes of whole trailing dims.
#include <gtest/gtest.h>

#include <numeric>

#include "engine/passes/pass_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr const char* kPass = "scatter_box_as_concat";

struct BoxCase {
  Shape data{2, 3, 5, 6};
  Shape box{2, 3, 5, 6};
  std::vector<int64_t> starts{0, 0, 0, 0};
  bool foldedIndices = false;  // one constant [box..., 4] instead of the meshgrid nodes
  bool reversedAxis = false;   // axis 3's indices run backwards
  std::string reduction = "none";
};

// The index tuples of the box, in order: [box..., k].
Tensor boxIndices(const BoxCase& c) {
  const size_t k = c.box.size();
  const int64_t count =
      std::accumulate(c.box.begin(), c.box.end(), int64_t{1}, std::multiplies<int64_t>());
  std::vector<int64_t> values;
  std::vector<int64_t> p(k, 0);
  for (int64_t e = 0; e < count; ++e) {
    for (size_t i = 0; i < k; ++i) values.push_back(c.starts[i] + p[i]);
    for (size_t i = k; i-- > 0;) {
      if (++p[i] < c.box[i]) break;
      p[i] = 0;
    }
  }
  Shape shape = c.box;
  shape.push_back(static_cast<int64_t>(k));
  return Tensor::fromVector(DataType::kInt64, shape, values);
}

// y = ScatterND(d, indices, Relu(u)); the indices as the TorchScript export of
// `d[..., s:, ..] = u` builds them, or folded.
Network scatter(const BoxCase& c) {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  Shape updates = c.box;  // the box, then D's dims past the k indexed ones
  updates.insert(updates.end(), c.data.begin() + static_cast<int64_t>(c.box.size()), c.data.end());
  g.inputs = {{"d", DataType::kFloat32, true, constantDims(c.data)},
              {"u", DataType::kFloat32, true, constantDims(updates)}};
  g.nodes.push_back(makeNode("Relu", {"u"}, {"updates"}));
  const size_t k = c.box.size();
  if (c.foldedIndices) {
    g.initializers["indices"] = boxIndices(c);
  } else {
    g.initializers["box"] = Tensor::int64Vector(c.box);
    g.initializers["last"] = Tensor::int64Vector({-1});
    std::vector<std::string> columns;
    for (size_t i = 0; i < k; ++i) {
      const std::string n = std::to_string(i);
      std::vector<int64_t> steps(static_cast<size_t>(c.box[i]));
      for (int64_t j = 0; j < c.box[i]; ++j)
        steps[static_cast<size_t>(j)] =
            c.starts[i] + (c.reversedAxis && i == 3 ? c.box[i] - 1 - j : j);
      Shape along(k - i, 1);  // right-aligned: [n_i, 1, ..] as the export's Reshape to [-1, 1, ..]
      along[0] = c.box[i];
      g.initializers["steps" + n] = Tensor::fromVector(DataType::kInt64, along, steps);
      g.nodes.push_back(makeNode("Expand", {"steps" + n, "box"}, {"grid" + n}));
      g.nodes.push_back(makeNode("Unsqueeze", {"grid" + n, "last"}, {"column" + n}));
      columns.push_back("column" + n);
    }
    g.nodes.push_back(withInt(makeNode("Concat", columns, {"indices"}), "axis", -1));
  }
  g.nodes.push_back(withString(makeNode("ScatterND", {"d", "indices", "updates"}, {"y"}),
                               "reduction", c.reduction));
  g.outputs = {{"y", DataType::kFloat32, false, {}}};
  return net;
}

std::vector<NamedTensor> run(const Network& net) {
  return runOnReference(net, randomFloatInputs(net));
}

// The meshgrids of a test-sized box would fold to one constant: the meshgrid cases keep them
// as nodes, as a batch-128 export's (past the folding cap) stay.
std::vector<PassApplication> rewrite(const BoxCase& c, size_t nodes, Network* fused = nullptr) {
  const std::vector<std::string> keepMeshgrids = {"fold_constants"};
  return fuseAndCompareOutputs(kPass, run, scatter(c), nodes, fused,
                               c.foldedIndices ? std::vector<std::string>{} : keepMeshgrids);
}

TEST(ScatterBoxAsConcat, WholeDataIsTheUpdates) {
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded ? "folded indices" : "meshgrid indices");
    BoxCase c;
    c.foldedIndices = folded;
    Network fused;
    // The Relu alone is left: the meshgrids go with the ScatterND.
    EXPECT_EQ(rewrite(c, 1, &fused).size(), 1u);
    EXPECT_EQ(countOps(fused, "ScatterND"), 0);
  }
}

TEST(ScatterBoxAsConcat, BoxFromAnOffsetBecomesSlicesAndConcats) {
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded ? "folded indices" : "meshgrid indices");
    // A class token: the box starts at 1 on both token axes. Axis 2: D's row 0, then (axis 3:
    // D's column 0, then U); 3 Slices, 2 Concats and the Relu.
    BoxCase c;
    c.box = {2, 3, 4, 5};
    c.starts = {0, 0, 1, 1};
    c.foldedIndices = folded;
    Network fused;
    EXPECT_EQ(rewrite(c, 6, &fused).size(), 1u);
    EXPECT_EQ(countOps(fused, "ScatterND"), 0);
    EXPECT_EQ(countOps(fused, "Concat"), 2);
  }
  // A box inside on one axis (rows 1..3 of 5): D's head, U, D's tail.
  BoxCase middle;
  middle.box = {2, 3, 3, 6};
  middle.starts = {0, 0, 1, 0};
  EXPECT_EQ(rewrite(middle, 4).size(), 1u);
  // Indices of 2 of D's 4 dims (k < rank): U is [2, 3] then D's [5, 6]; the box starts at
  // row 1 of axis 1's 4: D's row 0, then U.
  BoxCase partial;
  partial.data = {2, 4, 5, 6};
  partial.box = {2, 3};
  partial.starts = {0, 1};
  EXPECT_EQ(rewrite(partial, 3).size(), 1u);
}

// Boxes whose indices leave D (past its end, or before its start) are no box write: the
// ScatterND stays for its run-time error. Only the pipeline runs (the reference rejects them).
TEST(ScatterBoxAsConcat, BoxesOutsideTheDataStay) {
  for (const std::vector<int64_t>& starts :
       {std::vector<int64_t>{0, 0, 1, 0}, std::vector<int64_t>{0, 0, -1, 0}}) {
    BoxCase c;
    c.box = {2, 3, 5, 6};
    c.starts = starts;
    c.foldedIndices = true;
    Network net = scatter(c);
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(net, 1, {}, &applied).isOk());
    EXPECT_EQ(countOps(net, "ScatterND"), 1) << starts[2];
  }
}

TEST(ScatterBoxAsConcat, ScattersThatAreNoBoxWriteStay) {
  BoxCase reversed;  // indices out of order along axis 3
  reversed.reversedAxis = true;
  EXPECT_TRUE(rewrite(reversed, 11).empty());
  BoxCase add;  // a reduction accumulates into D
  add.reduction = "add";
  EXPECT_TRUE(rewrite(add, 11).empty());
}

}  // namespace
}  // namespace kiln::test
