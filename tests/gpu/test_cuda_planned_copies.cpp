// Cross-backend tests of the copies the CUDA context plan changes (context_plan.cpp): a
// StridedCopy of a contiguous run planned as a view of its input (no kernel), and a 16-bit
// engine's float32 input read in place by the Transposes that narrow it. Graphs built in code,
// run on the CUDA engine into poisoned outputs and on the CPU reference; the placements and
// implementations asserted. Part of test_cuda_data_movement (data_movement_test.h shared).
#include <map>
#include <string>
#include <vector>

#include "gpu/data_movement_test.h"
#include "kiln/reference_backend.h"

namespace kiln::test {
namespace {

using namespace data_movement;

// ---------------------------------------------------------------- planned views

Node stridedCopyNode(const std::string& in, const std::string& out, const Shape& shape,
                     const std::vector<int64_t>& strides, int64_t offset) {
  Node n;
  n.opType = "StridedCopy";
  n.domain = "ai.kiln";
  n.opset = 1;
  n.name = "copy_" + out;
  n.inputs = {in};
  n.outputs = {out};
  n.attributes["shape"] = Attribute{.kind = Attribute::Kind::kInts, .ints = shape};
  n.attributes["strides"] = Attribute{.kind = Attribute::Kind::kInts, .ints = strides};
  n.attributes["offset"] = Attribute{.kind = Attribute::Kind::kInt, .i = offset};
  return n;
}

Node plainNode(const std::string& op, std::vector<std::string> in, const std::string& out) {
  Node n;
  n.opType = op;
  n.name = op + "_" + out;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = {out};
  return n;
}

// One run of `net` (graph input "x", output "y") on the CUDA engine at `precision` into a
// poisoned output, and on the CPU reference, both fed `x` rounded to the precision first.
struct GraphRun {
  Tensor actual, expected;
  std::vector<cuda::LayerInfo> layers;
};
// Fatal failures (ASSERT) when either run fails: callers wrap it in ASSERT_NO_FATAL_FAILURE.
void runGraphAgainstReference(const Network& net, const Tensor& x, cuda::Precision precision,
                              GraphRun* run) {
  const std::map<std::string, Tensor> feeds =
      roundTo(std::map<std::string, Tensor>{{"x", x}}, precision);
  std::vector<NamedTensor> expected;
  const Status reference = ReferenceBackend(net).run(feeds, &expected);
  ASSERT_TRUE(reference.isOk()) << reference.toString();
  auto actual = runCudaPoisoned(net, feeds, precision, "y", &run->layers);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  run->actual = actual.value();
  run->expected = expected[0].tensor;
}

// A float32 graph input `name` of static `shape`.
ValueInfo floatInput(const std::string& name, const Shape& shape) {
  ValueInfo v;
  v.name = name;
  v.type = DataType::kFloat32;
  v.hasShape = true;
  v.shape.assign(shape.begin(), shape.end());
  return v;
}

// Planned views inside a graph (MViTv2's Q, K, V out of one packed tensor): x [4, 4, 64];
// rows 2..3 (a contiguous run at element 512) -> Reshape [2, 256] -> its second row (a view of
// a view: element 768 of x) -> Relu, plus a run at element 8 (16 bytes: off the arena's
// 256-byte alignment, so copied by a kernel) -> Add. Poisoned output, exact against the CPU
// reference in float32 and float16; the two aligned runs are views (no kernel), the third is not.
TEST(CudaStridedCopy, ContiguousRunsAreViewsInsideAGraph) {
  KILN_REQUIRE_GPU();
  Network net;
  net.irVersion = 8;
  net.opsets[""] = 17;
  net.opsets["ai.kiln"] = 1;
  Graph& g = net.graph;
  g.inputs.push_back(floatInput("x", {4, 4, 64}));
  g.initializers["rows"] = ints({2, 256});
  g.nodes.push_back(stridedCopyNode("x", "lower", {2, 4, 64}, {256, 64, 1}, 512));
  g.nodes.push_back(plainNode("Reshape", {"lower", "rows"}, "lower_rows"));
  g.nodes.push_back(stridedCopyNode("lower_rows", "last", {256}, {1}, 256));
  g.nodes.push_back(plainNode("Relu", {"last"}, "last_relu"));
  g.nodes.push_back(stridedCopyNode("x", "unaligned", {256}, {1}, 8));
  g.nodes.push_back(plainNode("Add", {"last_relu", "unaligned"}, "y"));
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, false, {}});
  for (cuda::Precision precision : {cuda::Precision::kFloat32, cuda::Precision::kFloat16}) {
    SCOPED_TRACE(cuda::precisionName(precision));
    GraphRun run;
    ASSERT_NO_FATAL_FAILURE(runGraphAgainstReference(net, floats({4, 4, 64}, 65), precision, &run));
    const double tolerance = precision == cuda::Precision::kFloat32 ? 0 : 1e-3;
    expectTensorNear(run.actual, run.expected, tolerance, tolerance);
    std::map<std::string, const cuda::LayerInfo*> byName;
    for (const cuda::LayerInfo& layer : run.layers) byName[layer.name] = &layer;
    for (const char* view : {"copy_lower", "copy_last"}) {
      ASSERT_TRUE(byName.count(view)) << view;
      EXPECT_EQ(byName[view]->placement, cuda::LayerPlacement::kAlias) << view;
      EXPECT_NE(byName[view]->implementation.find("view of its input at byte"), std::string::npos)
          << byName[view]->implementation;
    }
    ASSERT_TRUE(byName.count("copy_unaligned"));
    EXPECT_EQ(byName["copy_unaligned"]->placement, cuda::LayerPlacement::kGpu);
  }
}

// ---------------------------------------------------------------- narrowing Transposes

// x (a float32 graph input) -> [Reshape to `grid` ->] Transpose(perm) -> y on 16-bit engines
// (plus Relu(x) -> r when `alsoRelu`, a second reader that keeps the conversion pass). Exact
// against the CPU reference on x rounded to the engine's type, into a poisoned output; the
// Transpose's implementation must contain `implementation` ("" when it must not narrow).
void checkNarrowingTranspose(const Shape& shape, const Shape& grid,
                             const std::vector<int64_t>& perm, bool alsoRelu,
                             const std::string& implementation, uint32_t seed) {
  Network net;
  net.irVersion = 8;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs.push_back(floatInput("x", shape));
  std::string transposed = "x";
  if (!grid.empty()) {
    g.initializers["grid"] = ints(grid);
    g.nodes.push_back(plainNode("Reshape", {"x", "grid"}, "x_grid"));
    transposed = "x_grid";
  }
  Node transpose = plainNode("Transpose", {transposed}, "y");
  transpose.name = "transpose";
  transpose.attributes["perm"] = Attribute{.kind = Attribute::Kind::kInts, .ints = perm};
  g.nodes.push_back(transpose);
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, false, {}});
  if (alsoRelu) {
    g.nodes.push_back(plainNode("Relu", {"x"}, "r"));
    g.outputs.push_back(ValueInfo{"r", DataType::kFloat32, false, {}});
  }
  for (cuda::Precision precision : {cuda::Precision::kFloat16, cuda::Precision::kBFloat16}) {
    SCOPED_TRACE(cuda::precisionName(precision));
    GraphRun run;
    ASSERT_NO_FATAL_FAILURE(runGraphAgainstReference(net, floats(shape, seed), precision, &run));
    expectTensorNear(run.actual, run.expected, 0, 0);
    const cuda::LayerInfo* layer = nullptr;
    for (const cuda::LayerInfo& l : run.layers)
      if (l.name == "transpose") layer = &l;
    ASSERT_NE(layer, nullptr);
    EXPECT_EQ(layer->placement, cuda::LayerPlacement::kGpu);
    if (implementation.empty())
      EXPECT_EQ(layer->implementation.find("narrowed"), std::string::npos) << layer->implementation;
    else
      EXPECT_NE(layer->implementation.find(implementation), std::string::npos)
          << layer->implementation;
  }
}

// An image to NHWC (ResNet's first layer): 3 channels in column pairs; an odd pixel count
// element by element.
TEST(CudaNarrowingTranspose, ImageToChannelsLast) {
  KILN_REQUIRE_GPU();
  checkNarrowingTranspose({2, 3, 8, 10}, {}, {0, 2, 3, 1}, false,
                          "narrow transpose, float32 read and narrowed, pairs 2x3x80", 80);
  checkNarrowingTranspose({2, 3, 5, 7}, {}, {0, 2, 3, 1}, false,
                          "float32 read and narrowed, rank 3, an element a thread", 81);
}

// ViT's patch embedding as a copy: a Reshape view of the input to the patch grid, then the
// rank-6 permute, read in packs of 16, 8 or 4 floats as the patch width allows (12: 4); a grid
// of 3-wide patches element-wise.
TEST(CudaNarrowingTranspose, PatchGridThroughAView) {
  KILN_REQUIRE_GPU();
  checkNarrowingTranspose({2, 3, 32, 32}, {2, 3, 2, 16, 2, 16}, {0, 2, 4, 1, 3, 5}, false,
                          "float32 read and narrowed, rank 6, packs of 16", 82);
  checkNarrowingTranspose({2, 3, 16, 16}, {2, 3, 2, 8, 2, 8}, {0, 2, 4, 1, 3, 5}, false,
                          "rank 6, packs of 8", 85);
  checkNarrowingTranspose({1, 3, 24, 24}, {1, 3, 2, 12, 2, 12}, {0, 2, 4, 1, 3, 5}, false,
                          "rank 5, packs of 4", 86);
  checkNarrowingTranspose({2, 3, 9, 9}, {2, 3, 3, 3, 3, 3}, {0, 2, 4, 1, 3, 5}, false,
                          "an element a thread", 83);
}

// A second reader of the input (a Relu) keeps the conversion pass: the Transpose moves 16-bit
// words as everywhere else.
TEST(CudaNarrowingTranspose, AnotherReaderKeepsTheConversion) {
  KILN_REQUIRE_GPU();
  checkNarrowingTranspose({2, 3, 8, 10}, {}, {0, 2, 3, 1}, true, "", 84);
}

}  // namespace
}  // namespace kiln::test
