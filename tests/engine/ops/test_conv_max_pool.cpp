// ai.kiln FusedConvMaxPool (ir/conv_max_pool.h) on the CPU reference: hand-computed
// values (round half to even, saturation, zero point), then random data against
// FusedConv -> MaxPool -> QuantizeLinear run one after another (int8, uint8 and float
// outputs; float32 and float16 X; ceil_mode and pads), the channels-last form (only Y
// NHWC), shape inference, and bad inputs as one-line errors naming the node.
#include <gtest/gtest.h>

#include <set>

#include "backends/cpu/tactics/cpu_tactics.h"
#include "ir/channels_last.h"
#include "ir/conv_max_pool.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

// One stem's geometry: conv and pool attributes (the conv's as on the FusedConv).
struct Stem {
  Shape x = {2, 3, 13, 11};
  int64_t m = 8, r = 3, s = 5;
  std::vector<int64_t> convStrides = {2, 2}, convPads = {1, 2, 1, 2};
  std::string activation = "relu";
  std::vector<int64_t> poolKernel = {3, 3}, poolStrides = {2, 2}, poolPads = {1, 1, 1, 1};
  int64_t ceilMode = 0;
};

void convAttributes(const Stem& s, OpTest& t) {
  t.attr("strides", s.convStrides).attr("pads", s.convPads).attr("activation", s.activation);
}

// The layer as one node; `quantized`: y_scale (and zero point `zp` when defined).
OpTest fusedOp(const Stem& s, const Tensor& x, const Tensor& w, const Tensor& b,
               const Tensor* scale, const Tensor* zp) {
  OpTest t(kFusedConvMaxPoolOp, 1, kKilnDomain);
  convAttributes(s, t);
  t.attr("pool_kernel_shape", s.poolKernel)
      .attr("pool_strides", s.poolStrides)
      .attr("pool_pads", s.poolPads)
      .attr("pool_dilations", std::vector<int64_t>{1, 1})
      .attr("pool_ceil_mode", s.ceilMode);
  t.input(x).input(w).input(b);
  if (scale) t.input(*scale);
  if (zp) t.input(*zp);
  return t;
}

Tensor runOne(OpTest& t) {
  auto out = t.run();
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value()[0] : Tensor();
}

Tensor int8Scalar(DataType type, int value) {
  Tensor t(type, {});
  if (type == DataType::kInt8)
    t.data<int8_t>()[0] = static_cast<int8_t>(value);
  else
    t.data<uint8_t>()[0] = static_cast<uint8_t>(value);
  return t;
}

// FusedConv, MaxPool and QuantizeLinear (when `scale`), one after another; the layer's
// absent zero point means int8 (a QuantizeLinear's would mean uint8).
Tensor unfused(const Stem& s, const Tensor& x, const Tensor& w, const Tensor& b,
               const Tensor* scale, const Tensor* zp) {
  OpTest conv("FusedConv", 1, kKilnDomain);
  convAttributes(s, conv);
  conv.input(x).input(w).input(b);
  OpTest pool("MaxPool", 12);
  pool.attr("kernel_shape", s.poolKernel)
      .attr("strides", s.poolStrides)
      .attr("pads", s.poolPads)
      .attr("ceil_mode", s.ceilMode);
  pool.input(runOne(conv));
  Tensor pooled = runOne(pool);
  if (!scale) return pooled;
  OpTest q("QuantizeLinear", 19);
  q.input(pooled).input(*scale).input(zp ? *zp : int8Scalar(DataType::kInt8, 0));
  return runOne(q);
}

// Many distinct values: neither all saturated nor all zero.
void expectVaried(const Tensor& t) {
  std::set<double> values;
  for (int64_t i = 0; i < t.numel(); ++i) values.insert(t.valueAsDouble(i));
  EXPECT_GE(values.size(), 20u);
}

struct Inputs {
  Tensor x, w, b;
};

Inputs randomInputs(const Stem& s, DataType type, uint32_t seed) {
  return {randomTensor(type, s.x, seed, -2, 2),
          randomTensor(type, {s.m, s.x[1], s.r, s.s}, seed + 1, -0.5, 0.5),
          randomTensor(type, {s.m}, seed + 2, -0.5, 0.5)};
}

// relu(x - 5) of x = 0..15 in one 4x4 plane, 1x1 conv, then 2x2/2 max: 0, 2, 8, 10.
TEST(FusedConvMaxPool, HandComputedRoundsHalfToEvenAndSaturates) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  Stem s;
  s.convStrides = {1, 1};
  s.convPads = {0, 0, 0, 0};
  s.poolKernel = {2, 2};
  s.poolPads = {0, 0, 0, 0};
  const Tensor xt = floatTensor({1, 1, 4, 4}, x), w = floatTensor({1, 1, 1, 1}, {1});
  const Tensor b = floatTensor({1}, {-5});
  const Tensor zp = int8Scalar(DataType::kInt8, 3);
  struct Case {
    float scale;
    std::vector<double> expected;
  };
  // 2 / 4 = 0.5 -> 0 and 10 / 4 = 2.5 -> 2 (half to even); 8 / 0.05 + 3 = 163 -> 127.
  for (const Case& c :
       {Case{0.5f, {3, 7, 19, 23}}, Case{4.f, {3, 3, 5, 5}}, Case{0.05f, {3, 43, 127, 127}}}) {
    SCOPED_TRACE(c.scale);
    const Tensor scale = floatTensor({}, {c.scale});
    OpTest t = fusedOp(s, xt, w, b, &scale, &zp);
    Tensor expected(DataType::kInt8, {1, 1, 2, 2});
    for (int i = 0; i < 4; ++i) expected.data<int8_t>()[i] = static_cast<int8_t>(c.expected[i]);
    expectTensorNear(runOne(t), expected, 0, 0);
  }
  OpTest floatOut = fusedOp(s, xt, w, b, nullptr, nullptr);
  expectTensorNear(runOne(floatOut), floatTensor({1, 1, 2, 2}, {0, 2, 8, 10}), 0, 0);
}

TEST(FusedConvMaxPool, EqualsFusedConvMaxPoolQuantizeOnRandomData) {
  Stem ceil;
  ceil.ceilMode = 1;
  ceil.poolStrides = {2, 1};
  ceil.poolPads = {0, 1, 1, 0};
  Stem stem7;  // ResNet's stem, smaller: 7x7/2 pad 3, 3x3/2 pad 1
  stem7.x = {1, 3, 20, 18};
  stem7.m = 64;
  stem7.r = stem7.s = 7;
  stem7.convPads = {3, 3, 3, 3};
  Stem noAct;
  noAct.activation = "none";
  noAct.poolKernel = {2, 3};
  const Tensor scale = floatTensor({}, {0.05f});
  const Tensor zpInt8 = int8Scalar(DataType::kInt8, 0), zpUInt8 = int8Scalar(DataType::kUInt8, 7);
  uint32_t seed = 100;
  for (const Stem& s : {Stem{}, ceil, stem7, noAct}) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat16}) {
      SCOPED_TRACE(std::string(dataTypeName(type)) + " " + shapeToString(s.x));
      const Inputs in = randomInputs(s, type, seed += 3);
      struct Output {
        const Tensor* scale;
        const Tensor* zp;
      };
      for (const Output& o : {Output{&scale, &zpInt8}, Output{&scale, nullptr},
                              Output{&scale, &zpUInt8}, Output{nullptr, nullptr}}) {
        OpTest t = fusedOp(s, in.x, in.w, in.b, o.scale, o.zp);
        const Tensor actual = runOne(t);
        const Tensor expected = unfused(s, in.x, in.w, in.b, o.scale, o.zp);
        expectTensorNear(actual, expected, 0, 0);
        expectVaried(actual);
      }
    }
  }
}

// kiln_channels_last = 1: X and W as they are, Y [N, P, Q, M].
TEST(FusedConvMaxPool, ChannelsLastStoresOnlyYNhwc) {
  const Stem s;
  const Inputs in = randomInputs(s, DataType::kFloat32, 7);
  const Tensor scale = floatTensor({}, {0.02f});
  const Tensor zp = int8Scalar(DataType::kInt8, 0);
  OpTest t = fusedOp(s, in.x, in.w, in.b, &scale, &zp);
  Node node = t.node();
  node.attributes[kChannelsLastAttribute].i = 1;
  node.outputs = {"y"};
  const std::map<std::string, Tensor> values = {
      {"in0", in.x}, {"in1", in.w}, {"in2", in.b}, {"in3", scale}, {"in4", zp}};
  std::vector<Tensor> out;
  ASSERT_TRUE(runReferenceNode(node, values, &out).isOk());
  ASSERT_EQ(out.size(), 1u);
  const Tensor expected = unfused(s, in.x, in.w, in.b, &scale, &zp);
  expectTensorNear(out[0], permute4d(expected, kToChannelsLast), 0, 0);
  EXPECT_NE(out[0].shape(), expected.shape()) << "M must not equal the pooled width here";
}

// The builder's fp16 emulation rounds float32 inputs to fp16, but y_scale (float32 in
// every precision, as the CUDA kernel reads it): the same values as the three ops on
// fp16 X, W and B with the float32 scale.
TEST(FusedConvMaxPool, Fp16EmulationKeepsYScaleFloat32) {
  const Stem s;
  const Inputs in = randomInputs(s, DataType::kFloat32, 21);
  const Tensor scale = floatTensor({}, {0.0301f});  // not an fp16 value
  const Tensor zp = int8Scalar(DataType::kInt8, 0);
  OpTest t = fusedOp(s, in.x, in.w, in.b, &scale, &zp);
  const cpu::KernelEntry* entry = cpu::builtinKernels().find(kKilnDomain, kFusedConvMaxPoolOp, 1);
  ASSERT_NE(entry, nullptr);
  Node node = t.node();
  node.outputs = {"y"};
  std::vector<Tensor> out;
  Status status = cpu::runKernelAtPrecision(node, entry->fn, {&in.x, &in.w, &in.b, &scale, &zp}, {},
                                            DataType::kFloat16, DataType::kInt8, &out);
  ASSERT_TRUE(status.isOk()) << status.toString();
  ASSERT_EQ(out.size(), 1u);
  const Tensor expected =
      unfused(s, castTensor(in.x, DataType::kFloat16), castTensor(in.w, DataType::kFloat16),
              castTensor(in.b, DataType::kFloat16), &scale, &zp);
  expectTensorNear(out[0], expected, 0, 0);
  expectVaried(out[0]);
}

// A network of one FusedConvMaxPool node reading x [2, 3, 13, 11] and w [8, 3, 3, 5].
Network oneNodeNetwork(const Stem& s, bool scale, DataType zeroPoint, bool channelsLast) {
  Network net;
  net.opsets[""] = 17;
  net.opsets[kKilnDomain] = 1;
  Graph& g = net.graph;
  g.inputs = {{"x",
               DataType::kFloat16,
               true,
               {DimExpr::symbol("n"), DimExpr(3), DimExpr(13), DimExpr(11)}}};
  g.initializers["w"] = randomTensor(DataType::kFloat16, {8, 3, 3, 5}, 1);
  g.initializers["b"] = randomTensor(DataType::kFloat16, {8}, 2);
  g.initializers["s"] = floatTensor({}, {0.1f});
  if (zeroPoint != DataType::kUndefined) g.initializers["zp"] = int8Scalar(zeroPoint, 0);
  OpTest t = fusedOp(s, Tensor(), Tensor(), Tensor(), nullptr, nullptr);
  Node node = t.node();
  node.inputs = {"x", "w", "b"};
  if (scale) node.inputs.push_back("s");
  if (zeroPoint != DataType::kUndefined) node.inputs.push_back("zp");
  node.outputs = {"y"};
  if (channelsLast) node.attributes[kChannelsLastAttribute].i = 1;
  g.nodes = {node};
  g.outputs = {{"y", DataType::kUndefined, false, {}}};
  return net;
}

InferredValue inferY(const Network& net) {
  auto shapes = inferShapes(net);
  EXPECT_TRUE(shapes.isOk()) << shapes.status().toString();
  if (!shapes.isOk()) return {};
  EXPECT_TRUE(shapes.value().unresolved.empty());
  return shapes.value().values.at("y");
}

// Conv: 13x11 -> 7x6 (3x5/2, pads 1,2); pool 3x3/2 pad 1: 4x3, with ceil_mode the
// strides 2,1 and pads 0,1 / 1,0 give ceil(5/2)+1 = 4 (the last window starts inside)
// by ceil(4/1)+1 = 5 (floor: 3 by 5).
TEST(FusedConvMaxPool, ShapeInferenceIsMaxPoolsOnConvsOutput) {
  const Stem s;
  InferredValue y = inferY(oneNodeNetwork(s, true, DataType::kUndefined, false));
  EXPECT_EQ(y.type, DataType::kInt8);
  EXPECT_EQ(symbolicShapeToString(y.shape), "nx8x4x3");
  y = inferY(oneNodeNetwork(s, true, DataType::kUInt8, false));
  EXPECT_EQ(y.type, DataType::kUInt8);
  y = inferY(oneNodeNetwork(s, false, DataType::kUndefined, false));
  EXPECT_EQ(y.type, DataType::kFloat16);
  EXPECT_EQ(symbolicShapeToString(y.shape), "nx8x4x3");
  Stem ceil;
  ceil.ceilMode = 1;
  ceil.poolStrides = {2, 1};
  ceil.poolPads = {0, 1, 1, 0};
  EXPECT_EQ(symbolicShapeToString(inferY(oneNodeNetwork(ceil, true, DataType::kInt8, false)).shape),
            "nx8x4x5");
  ceil.ceilMode = 0;
  EXPECT_EQ(symbolicShapeToString(inferY(oneNodeNetwork(ceil, true, DataType::kInt8, false)).shape),
            "nx8x3x5");
  // Channels-last: X read as it is, Y stored [N, P, Q, M].
  y = inferY(oneNodeNetwork(s, true, DataType::kInt8, true));
  EXPECT_EQ(y.type, DataType::kInt8);
  EXPECT_EQ(symbolicShapeToString(y.shape), "nx4x3x8");
}

TEST(FusedConvMaxPool, BadInputsAreOneLineErrorsNamingTheNode) {
  const Stem s;
  const Inputs in = randomInputs(s, DataType::kFloat32, 9);
  const Tensor scale = floatTensor({}, {0.02f});
  const Tensor scales = floatTensor({2}, {0.02f, 0.03f});
  const Tensor zp = int8Scalar(DataType::kInt8, 0);
  struct Case {
    const char* what;
    OpTest test;
    const char* message;
  };
  OpTest grouped =
      fusedOp(s, in.x, randomTensor(DataType::kFloat32, {8, 1, 3, 5}, 3), in.b, &scale, &zp);
  grouped.attr("group", int64_t{3});
  std::vector<Case> cases = {
      {"3-D X",
       fusedOp(s, randomTensor(DataType::kFloat32, {2, 3, 13}, 4), in.w, in.b, &scale, &zp),
       "must be 4-D"},
      {"per-channel y_scale", fusedOp(s, in.x, in.w, in.b, &scales, &zp),
       "input 3 (scale) must be one float32 value"},
      {"int8 X", fusedOp(s, randomTensor(DataType::kInt8, s.x, 5), in.w, in.b, &scale, &zp),
       "must be float32, float16 or bfloat16"},
      {"group 3", grouped, "only group 1"}};
  OpTest zpAlone = fusedOp(s, in.x, in.w, in.b, nullptr, nullptr);
  zpAlone.missingInput().input(zp);
  cases.push_back({"y_zero_point without y_scale", zpAlone, "needs input 3 (y_scale)"});
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto out = c.test.run();
    ASSERT_FALSE(out.isOk());
    const std::string text = out.status().toString();
    EXPECT_NE(text.find(c.message), std::string::npos) << text;
    EXPECT_NE(text.find("FusedConvMaxPool_test"), std::string::npos) << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace kiln::test
