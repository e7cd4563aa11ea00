// Cross-backend tests for the elementwise family: CUDA engine vs CPU reference.
// Float ops run at fp32/fp16/bf16; integer and bool ops at fp32 only (compared exactly).
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_op_test.h"
#include "kiln/cuda_runtime.h"
#include "kiln/graph.h"

namespace kiln::test {
namespace {

using cuda::Precision;

// GpuOpTest plus a check that the node really ran on the GPU: a host fallback would
// match the reference too, so check() also builds the node at fp32 and expects its
// layer on the device.
class EwTest {
 public:
  EwTest(const std::string& opType, int opset, const std::string& domain = "")
      : m_test(opType, opset, domain) {
    m_node.domain = domain;
    m_node.opType = opType;
    m_node.opset = opset;
    m_node.name = opType + "_under_test";
  }
  EwTest& attr(const std::string& name, int64_t value) {
    m_test.attr(name, value);
    Attribute a;
    a.kind = Attribute::Kind::kInt;
    a.i = value;
    m_node.attributes[name] = a;
    return *this;
  }
  EwTest& attr(const std::string& name, float value) {
    m_test.attr(name, value);
    Attribute a;
    a.kind = Attribute::Kind::kFloat;
    a.f = value;
    m_node.attributes[name] = a;
    return *this;
  }
  EwTest& attr(const std::string& name, const std::string& value) {
    m_test.attr(name, value);
    Attribute a;
    a.kind = Attribute::Kind::kString;
    a.s = value;
    m_node.attributes[name] = a;
    return *this;
  }
  EwTest& input(const Tensor& t) {
    m_test.input(t);
    return add(t, false);
  }
  EwTest& constant(const Tensor& t) {
    m_test.constant(t);
    return add(t, true);
  }
  EwTest& missingInput() {
    m_test.missingInput();
    return add(Tensor(), false);
  }
  Result<std::vector<Tensor>> runCuda() { return m_test.runCuda(); }

  void check(const std::vector<PrecisionTolerance>& tolerances = defaultTolerances()) {
    m_test.check(tolerances);
    expectOnGpu();
  }

 private:
  EwTest& add(const Tensor& t, bool isConstant) {
    m_inputs.push_back(t);
    m_isConstant.push_back(isConstant);
    return *this;
  }

  void expectOnGpu() {
    Network network;
    network.irVersion = 8;
    network.opsets[m_node.domain] = m_node.opset;
    if (!m_node.domain.empty()) network.opsets[""] = 17;
    Node node = m_node;
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      const std::string name = "in" + std::to_string(i);
      if (!m_inputs[i].defined()) {
        node.inputs.push_back("");
      } else if (m_isConstant[i]) {
        node.inputs.push_back(name);
        network.graph.initializers[name] = m_inputs[i];
      } else {
        node.inputs.push_back(name);
        ValueInfo info;
        info.name = name;
        info.type = m_inputs[i].type();
        info.hasShape = true;
        for (int64_t d : m_inputs[i].shape()) info.shape.push_back(DimExpr(d));
        network.graph.inputs.push_back(info);
      }
    }
    node.outputs.push_back("out0");
    ValueInfo out;
    out.name = "out0";
    network.graph.outputs.push_back(out);
    network.graph.nodes.push_back(node);
    cuda::EngineOptions options;
    options.allowTf32 = false;
    auto engine = cuda::Engine::create(std::make_shared<Network>(network), options);
    ASSERT_TRUE(engine.isOk()) << engine.status().toString();
    auto context = engine.value()->createContext();
    ASSERT_TRUE(context.isOk()) << context.status().toString();
    cuda::ExecutionContext& ctx = *context.value();
    for (size_t i = 0; i < m_inputs.size(); ++i) {
      if (!m_inputs[i].defined() || m_isConstant[i]) continue;
      const std::string name = "in" + std::to_string(i);
      ASSERT_TRUE(ctx.setInputShape(name, m_inputs[i].shape()).isOk());
      ASSERT_TRUE(ctx.setInput(name, m_inputs[i]).isOk());
    }
    Status status = ctx.execute();
    ASSERT_TRUE(status.isOk()) << status.toString();
    const std::vector<cuda::LayerInfo> layers = ctx.layers();
    ASSERT_EQ(layers.size(), 1u);
    for (const cuda::LayerInfo& layer : layers) {
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu)
          << m_node.opType << " ran as " << cuda::layerPlacementName(layer.placement) << ": "
          << layer.note;
    }
  }

  GpuOpTest m_test;
  Node m_node;
  std::vector<Tensor> m_inputs;
  std::vector<bool> m_isConstant;
};

// For ops whose result grows fast with the input (Exp, Pow, Tan, Sinh, Cosh, ...): the
// 16-bit engines see the same rounded inputs as the reference, but an output of
// magnitude ~20 rounded to half/bfloat16 is off by more than the default atol.
std::vector<PrecisionTolerance> looseTolerances() {
  return {{Precision::kFloat32, 1e-5, 1e-5},
          {Precision::kFloat16, 5e-3, 5e-3},
          {Precision::kBFloat16, 3e-2, 3e-2}};
}

const Shape kShape = {2, 3, 4};

// Integer-valued float32 data, so that comparisons find equal elements.
Tensor smallIntegerFloats(const Shape& shape, uint32_t seed) {
  return castTensor(randomTensor(DataType::kInt32, shape, seed, -3, 3), DataType::kFloat32);
}

struct UnaryCase {
  const char* op;
  int opset;
  double lo;
  double hi;
  bool loose;  // looseTolerances() in 16-bit
};

void checkUnaryCases(const std::vector<UnaryCase>& cases) {
  uint32_t seed = 100;
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.op);
    EwTest(c.op, c.opset)
        .input(randomFloats({3, 5, 7}, seed++, c.lo, c.hi))
        .check(c.loose ? looseTolerances() : defaultTolerances());
  }
}

// ---- Unary math.

TEST(CudaElementwise, UnaryMath) {
  KILN_REQUIRE_GPU();
  checkUnaryCases({
      {"Abs", 13, -2, 2, false},         {"Neg", 13, -2, 2, false},
      {"Sign", 13, -2, 2, false},        {"Exp", 13, -3, 3, true},
      {"Log", 13, 0.05, 10, false},   // positive inputs
      {"Sqrt", 13, 0.01, 10, false},  // positive inputs
      {"Reciprocal", 13, 0.5, 4, false}, {"Floor", 13, -4, 4, false},
      {"Ceil", 13, -4, 4, false},        {"Round", 11, -4, 4, false},
      {"Sin", 7, -3, 3, false},          {"Cos", 7, -3, 3, false},
      {"Tan", 7, -1.2, 1.2, true},       {"Asin", 7, -0.95, 0.95, false},  // |x| < 1
      {"Acos", 7, -0.95, 0.95, false},                                     // |x| < 1
      {"Atan", 7, -3, 3, false},         {"Sinh", 9, -3, 3, true},
      {"Cosh", 9, -3, 3, true},          {"Asinh", 9, -3, 3, false},
      {"Acosh", 9, 1.1, 5, false},    // x > 1
      {"Atanh", 9, -0.9, 0.9, true},  // |x| < 1; steep near the ends
      {"Erf", 13, -2, 2, false},
  });
}

TEST(CudaElementwise, RoundHalvesToEven) {
  KILN_REQUIRE_GPU();
  EwTest("Round", 11)
      .input(floatTensor({8}, {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.49f, -3.51f}))
      .check();
}

TEST(CudaElementwise, IntegerUnary) {
  KILN_REQUIRE_GPU();
  EwTest("Abs", 13).input(randomTensor(DataType::kInt32, kShape, 1, -50, 50)).check(fp32Only());
  EwTest("Abs", 13).input(randomTensor(DataType::kUInt8, kShape, 2, 0, 250)).check(fp32Only());
  EwTest("Neg", 13).input(randomTensor(DataType::kInt64, kShape, 3, -50, 50)).check(fp32Only());
  EwTest("Neg", 13).input(randomTensor(DataType::kInt8, kShape, 4, -100, 100)).check(fp32Only());
  EwTest("Sign", 13).input(randomTensor(DataType::kInt16, kShape, 5, -5, 5)).check(fp32Only());
  EwTest("Sign", 13).input(randomTensor(DataType::kUInt32, kShape, 6, 0, 5)).check(fp32Only());
  EwTest("Erf", 13).input(randomTensor(DataType::kInt32, kShape, 7, -3, 3)).check(fp32Only());
  EwTest("Relu", 14).input(randomTensor(DataType::kInt32, kShape, 8, -9, 9)).check(fp32Only());
  EwTest("Relu", 14).input(randomTensor(DataType::kInt8, kShape, 9, -9, 9)).check(fp32Only());
}

TEST(CudaElementwise, FloatUnaryInFloat64) {
  KILN_REQUIRE_GPU();
  EwTest("Exp", 13).input(randomTensor(DataType::kFloat64, kShape, 10, -3, 3)).check(fp32Only());
  EwTest("Sigmoid", 13)
      .input(randomTensor(DataType::kFloat64, kShape, 11, -3, 3))
      .check(fp32Only());
}

TEST(CudaElementwise, NotAndBitwiseNot) {
  KILN_REQUIRE_GPU();
  EwTest("Not", 1).input(randomTensor(DataType::kBool, kShape, 12)).check(fp32Only());
  EwTest("BitwiseNot", 18)
      .input(randomTensor(DataType::kInt32, kShape, 13, -100, 100))
      .check(fp32Only());
  EwTest("BitwiseNot", 18)
      .input(randomTensor(DataType::kUInt8, kShape, 14, 0, 255))
      .check(fp32Only());
}

TEST(CudaElementwise, IsNaNAndIsInf) {
  KILN_REQUIRE_GPU();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floatTensor({2, 4}, {1.f, nan, inf, -inf, 0.f, -2.f, nan, inf});
  EwTest("IsNaN", 13).input(x).check();
  EwTest("IsInf", 10).input(x).check();
  EwTest("IsInf", 10).attr("detect_negative", int64_t{0}).input(x).check();
  EwTest("IsInf", 10).attr("detect_positive", int64_t{0}).input(x).check();
}

// ---- Activations.

TEST(CudaElementwise, Activations) {
  KILN_REQUIRE_GPU();
  checkUnaryCases({
      {"Relu", 14, -2, 2, false},
      {"Sigmoid", 13, -6, 6, false},
      {"HardSwish", 14, -5, 5, false},
      {"Softplus", 1, -5, 5, false},
      {"Softsign", 1, -5, 5, false},
      {"Tanh", 13, -3, 3, false},
      {"Mish", 18, -4, 4, false},
      {"Elu", 6, -3, 3, false},
      {"Selu", 6, -3, 3, false},
      {"LeakyRelu", 6, -3, 3, false},
      {"HardSigmoid", 6, -5, 5, false},
      {"ThresholdedRelu", 10, -3, 3, false},
      {"Celu", 12, -3, 3, false},
      {"Swish", 24, -5, 5, false},
  });
}

TEST(CudaElementwise, ActivationAttributes) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 33}, 20, -3, 3);
  EwTest("LeakyRelu", 16).attr("alpha", 0.2f).input(x).check();
  EwTest("Elu", 6).attr("alpha", 0.5f).input(x).check();
  EwTest("Selu", 6).attr("alpha", 1.5f).attr("gamma", 1.1f).input(x).check();
  EwTest("Celu", 12).attr("alpha", 0.7f).input(x).check();
  EwTest("HardSigmoid", 6).attr("alpha", 0.3f).attr("beta", 0.4f).input(x).check();
  EwTest("ThresholdedRelu", 10).attr("alpha", 0.4f).input(x).check();
  EwTest("Swish", 24).attr("alpha", 1.702f).input(x).check();
}

// The op table's demo op (tests/engine/ops/test_op_table.cpp): a row and two kernels.
TEST(CudaElementwise, QuickGeluOfTheMicrosoftDomain) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 33}, 24, -5, 5);
  EwTest("QuickGelu", 1, "com.microsoft").input(x).check();
  EwTest("QuickGelu", 1, "com.microsoft").attr("alpha", 1.2f).input(x).check();
}

TEST(CudaElementwise, Gelu) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({4, 65}, 21, -4, 4);
  EwTest("Gelu", 20).input(x).check();
  EwTest("Gelu", 20).attr("approximate", std::string("none")).input(x).check();
  EwTest("Gelu", 20).attr("approximate", std::string("tanh")).input(x).check();
}

TEST(CudaElementwise, Shrink) {
  KILN_REQUIRE_GPU();
  EwTest("Shrink", 9).input(randomFloats(kShape, 22, -2, 2)).check();
  EwTest("Shrink", 9)
      .attr("lambd", 0.8f)
      .attr("bias", 0.3f)
      .input(randomFloats(kShape, 23, -2, 2))
      .check();
  EwTest("Shrink", 9)
      .attr("lambd", 2.0f)
      .attr("bias", 1.0f)
      .input(randomTensor(DataType::kInt32, kShape, 24, -6, 6))
      .check(fp32Only());
}

TEST(CudaElementwise, SwiGlu) {
  KILN_REQUIRE_GPU();
  EwTest("SwiGLU", 28)
      .input(randomFloats({3, 40}, 25, -4, 4))
      .input(randomFloats({3, 40}, 26, -2, 2))
      .check();
}

TEST(CudaElementwise, ClipAttributes) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 50}, 30, -3, 3);
  EwTest("Clip", 6).attr("min", -0.5f).attr("max", 1.25f).input(x).check();
  EwTest("Clip", 6).attr("max", 0.75f).input(x).check();
  EwTest("Clip", 6).input(x).check();
}

TEST(CudaElementwise, ClipInputs) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 50}, 31, -3, 3);
  Tensor lo = floatTensor({}, {-0.5f});
  Tensor hi = floatTensor({}, {1.25f});
  EwTest("Clip", 13).input(x).constant(lo).constant(hi).check();
  EwTest("Clip", 13).input(x).missingInput().constant(hi).check();
  EwTest("Clip", 13).input(x).constant(lo).check();
  EwTest("Clip", 13).input(x).check();
  // Bounds computed at run time: read by the kernel on the device.
  EwTest("Clip", 13).input(x).input(lo).input(hi).check();
  // min > max: every element becomes max.
  EwTest("Clip", 13).input(x).constant(hi).constant(lo).check();
}

TEST(CudaElementwise, ClipIntegers) {
  KILN_REQUIRE_GPU();
  Tensor x = randomTensor(DataType::kInt64, {4, 9}, 32, -100, 100);
  EwTest("Clip", 13)
      .input(x)
      .constant(int64Tensor({}, {-20}))
      .constant(int64Tensor({}, {35}))
      .check(fp32Only());
  EwTest("Clip", 13).input(x).missingInput().constant(int64Tensor({}, {0})).check(fp32Only());
  Tensor u8 = randomTensor(DataType::kUInt8, {4, 9}, 33, 0, 255);
  EwTest("Clip", 13)
      .input(u8)
      .constant(Tensor::fromVector<uint8_t>(DataType::kUInt8, {}, {10}))
      .check(fp32Only());
}

TEST(CudaElementwise, PRelu) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({2, 3, 4, 5}, 40, -2, 2);
  EwTest("PRelu", 16).input(x).input(randomFloats({3, 1, 1}, 41, 0, 0.5)).check();
  EwTest("PRelu", 16).input(x).constant(randomFloats({5}, 42, 0, 0.5)).check();
  EwTest("PRelu", 16).input(x).constant(floatTensor({1}, {0.25f})).check();
  EwTest("PRelu", 16).input(x).input(randomFloats({2, 3, 4, 5}, 43, 0, 0.5)).check();
  EwTest("PRelu", 16)
      .input(randomTensor(DataType::kInt32, {3, 4}, 44, -20, 20))
      .input(randomTensor(DataType::kInt32, {4}, 45, 1, 4))
      .check(fp32Only());
}

// ---- Binary arithmetic with broadcasting.

TEST(CudaElementwise, ArithmeticBroadcast) {
  KILN_REQUIRE_GPU();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}},        // equal shapes
      {{2, 3, 4}, {3, 1}},           // broadcast
      {{2, 3, 4}, {}},               // scalar right
      {{}, {2, 3, 4}},               // scalar left
      {{4}, {2, 3, 4}},              // row vector left
      {{2, 1, 4}, {3, 1}},           // both sides broadcast
      {{2, 3, 4, 5}, {2, 1, 4, 1}},  // strided, no dims merge
      {{1, 3, 4}, {2, 3, 4}},        // leading 1
  };
  uint32_t seed = 50;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(op) + " " + shapeToString(a) + " with " + shapeToString(b));
      // Divisors away from zero.
      EwTest(op, 14)
          .input(randomFloats(a, seed++, -2, 2))
          .input(randomFloats(b, seed++, 0.5, 2))
          .check();
    }
  }
}

TEST(CudaElementwise, ArithmeticLargeAndEmpty) {
  KILN_REQUIRE_GPU();
  // 2.1M elements: many blocks, grid-stride loops.
  EwTest("Add", 14)
      .input(randomFloats({64, 1000, 33}, 60))
      .input(randomFloats({1000, 1}, 61))
      .check();
  EwTest("Mul", 14).input(randomFloats({2, 0, 3}, 62)).input(randomFloats({3}, 63)).check();
}

TEST(CudaElementwise, ArithmeticConstantOperand) {
  KILN_REQUIRE_GPU();
  EwTest("Add", 14).input(randomFloats({4, 16}, 64)).constant(randomFloats({16}, 65)).check();
  EwTest("Mul", 14).constant(floatTensor({}, {0.125f})).input(randomFloats({4, 16}, 66)).check();
}

TEST(CudaElementwise, IntegerArithmetic) {
  KILN_REQUIRE_GPU();
  const std::vector<DataType> types = {DataType::kInt8,   DataType::kUInt8, DataType::kInt16,
                                       DataType::kUInt16, DataType::kInt32, DataType::kUInt32,
                                       DataType::kInt64,  DataType::kUInt64};
  uint32_t seed = 70;
  for (DataType type : types) {
    SCOPED_TRACE(dataTypeName(type));
    Tensor a = randomTensor(type, {3, 4}, seed++, 0, 120);
    Tensor b = randomTensor(type, {4}, seed++, 1, 9);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      EwTest(op, 14).input(a).input(b).check(fp32Only());
    }
  }
}

TEST(CudaElementwise, IntegerWrapAround) {
  KILN_REQUIRE_GPU();
  // int8 overflow wraps as in numpy.
  Tensor a = Tensor::fromVector<int8_t>(DataType::kInt8, {4}, {120, -120, 100, -128});
  Tensor b = Tensor::fromVector<int8_t>(DataType::kInt8, {4}, {10, -10, 3, -1});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    EwTest(op, 14).input(a).input(b).check(fp32Only());
  }
}

TEST(CudaElementwise, SignedIntegerDivAndMod) {
  KILN_REQUIRE_GPU();
  // Negative dividends and divisors: Div truncates toward zero, Mod (fmod=0) takes the
  // divisor's sign, fmod=1 the dividend's.
  Tensor a = int64Tensor({2, 6}, {7, -7, 7, -7, 0, 13, -13, 5, -5, 9, -9, 100});
  Tensor b = int64Tensor({6}, {3, 3, -3, -3, 5, -1});
  EwTest("Div", 14).input(a).input(b).check(fp32Only());
  EwTest("Mod", 13).input(a).input(b).check(fp32Only());
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(b).check(fp32Only());
  Tensor a32 = randomTensor(DataType::kInt32, {5, 7}, 80, -100, 100);
  Tensor b32 = castTensor(int64Tensor({7}, {1, -2, 3, -4, 5, -6, 7}), DataType::kInt32);
  EwTest("Div", 14).input(a32).input(b32).check(fp32Only());
  EwTest("Mod", 13).input(a32).input(b32).check(fp32Only());
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a32).input(b32).check(fp32Only());
  Tensor u = randomTensor(DataType::kUInt16, {5, 7}, 81, 0, 1000);
  Tensor v = randomTensor(DataType::kUInt16, {7}, 82, 1, 30);
  EwTest("Mod", 13).input(u).input(v).check(fp32Only());
}

TEST(CudaElementwise, FloatMod) {
  KILN_REQUIRE_GPU();
  Tensor a = randomFloats({3, 8}, 90, -10, 10);
  Tensor b = randomFloats({8}, 91, 1, 3);
  Tensor negB = randomFloats({8}, 92, -3, -1);
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(b).check();
  EwTest("Mod", 13).attr("fmod", int64_t{1}).input(a).input(negB).check();
  EwTest("Mod", 13).input(a).input(b).check();
  EwTest("Mod", 13).input(a).input(negB).check();
}

TEST(CudaElementwise, Pow) {
  KILN_REQUIRE_GPU();
  Tensor base = randomFloats({3, 4, 5}, 100, 0.5, 2);
  // Same float types, broadcast exponent. Results grow like exp: loose in 16-bit.
  EwTest("Pow", 15).input(base).input(randomFloats({4, 1}, 101, -2, 2)).check(looseTolerances());
  EwTest("Pow", 15).input(base).input(randomFloats({3, 4, 5}, 102, -2, 2)).check(looseTolerances());
  // x^2 and x^0.5 with a scalar constant exponent.
  EwTest("Pow", 15).input(base).constant(floatTensor({}, {2.f})).check(looseTolerances());
  EwTest("Pow", 15).input(base).constant(floatTensor({}, {0.5f})).check(looseTolerances());
  // Negative base with an integer exponent.
  EwTest("Pow", 15)
      .input(randomFloats({3, 4, 5}, 103, -2, 2))
      .input(randomTensor(DataType::kInt64, {5}, 104, 0, 4))
      .check(looseTolerances());
  // Float exponent of another float type than the base.
  EwTest("Pow", 15)
      .input(base)
      .input(randomTensor(DataType::kFloat64, {5}, 105, -2, 2))
      .check(looseTolerances());
}

TEST(CudaElementwise, IntegerPow) {
  KILN_REQUIRE_GPU();
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt64, {4, 6}, 110, -6, 6))
      .input(randomTensor(DataType::kInt64, {6}, 111, -1, 6))
      .check(fp32Only());
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt32, {4, 6}, 112, -6, 6))
      .input(randomTensor(DataType::kInt8, {4, 6}, 113, 0, 5))
      .check(fp32Only());
  // Integer base with a float exponent: the double result truncates toward zero.
  EwTest("Pow", 15)
      .input(randomTensor(DataType::kInt32, {4, 6}, 114, 1, 9))
      .input(randomFloats({6}, 115, 0, 2.5))
      .check(fp32Only());
}

// ---- Comparisons and logic.

TEST(CudaElementwise, Comparisons) {
  KILN_REQUIRE_GPU();
  Tensor a = smallIntegerFloats({2, 3, 4}, 120);
  Tensor b = smallIntegerFloats({3, 1}, 121);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    EwTest(op, 16).input(a).input(b).check();
    EwTest(op, 16).input(a).input(a).check();
    EwTest(op, 16)
        .input(randomTensor(DataType::kInt64, {2, 3, 4}, 122, -3, 3))
        .input(randomTensor(DataType::kInt64, {4}, 123, -3, 3))
        .check(fp32Only());
    EwTest(op, 16)
        .input(randomTensor(DataType::kUInt8, {5, 6}, 124, 0, 5))
        .input(randomTensor(DataType::kUInt8, {5, 1}, 125, 0, 5))
        .check(fp32Only());
  }
  EwTest("Equal", 19)
      .input(randomTensor(DataType::kBool, {3, 4}, 126))
      .input(randomTensor(DataType::kBool, {4}, 127))
      .check(fp32Only());
}

TEST(CudaElementwise, Logical) {
  KILN_REQUIRE_GPU();
  Tensor a = randomTensor(DataType::kBool, {2, 3, 4}, 130);
  Tensor b = randomTensor(DataType::kBool, {3, 1}, 131);
  for (const char* op : {"And", "Or", "Xor"}) {
    EwTest(op, 7).input(a).input(b).check(fp32Only());
    EwTest(op, 7).input(a).input(randomTensor(DataType::kBool, {2, 3, 4}, 132)).check(fp32Only());
  }
}

TEST(CudaElementwise, Bitwise) {
  KILN_REQUIRE_GPU();
  for (DataType type : {DataType::kInt32, DataType::kUInt8, DataType::kInt64}) {
    SCOPED_TRACE(dataTypeName(type));
    Tensor a = randomTensor(type, {3, 4}, 140, -100, 100);
    Tensor b = randomTensor(type, {4}, 141, -100, 100);
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
      EwTest(op, 18).input(a).input(b).check(fp32Only());
    }
  }
}

TEST(CudaElementwise, BitShift) {
  KILN_REQUIRE_GPU();
  Tensor u8 = randomTensor(DataType::kUInt8, {3, 5}, 150, 0, 255);
  Tensor s8 = randomTensor(DataType::kUInt8, {5}, 151, 0, 9);  // 8 and 9 shift everything out
  Tensor u32 = randomTensor(DataType::kUInt32, {3, 5}, 152, 0, 100000);
  Tensor s32 = randomTensor(DataType::kUInt32, {3, 5}, 153, 0, 33);
  Tensor u64 = randomTensor(DataType::kUInt64, {3, 5}, 154, 0, 1e9);
  Tensor s64 = Tensor::fromVector<uint64_t>(DataType::kUInt64, {}, {3});
  for (const char* direction : {"LEFT", "RIGHT"}) {
    SCOPED_TRACE(direction);
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u8)
        .input(s8)
        .check(fp32Only());
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u32)
        .input(s32)
        .check(fp32Only());
    EwTest("BitShift", 11)
        .attr("direction", std::string(direction))
        .input(u64)
        .input(s64)
        .check(fp32Only());
  }
}

// ---- Variadic.

TEST(CudaElementwise, VariadicFloat) {
  KILN_REQUIRE_GPU();
  Tensor a = randomFloats({2, 3, 4}, 160);
  Tensor b = randomFloats({3, 1}, 161);
  Tensor c = randomFloats({4}, 162);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    EwTest(op, 13).input(a).check();
    EwTest(op, 13).input(a).input(b).check();
    EwTest(op, 13).input(a).input(b).input(c).check();
    EwTest(op, 13).input(c).input(b).input(a).check();
  }
}

TEST(CudaElementwise, VariadicManyInputs) {
  KILN_REQUIRE_GPU();
  // 11 inputs: more than one launch's worth (8), accumulated in the output.
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    SCOPED_TRACE(op);
    EwTest test(op, 13);
    for (uint32_t i = 0; i < 11; ++i) {
      test.input(randomFloats(i % 3 == 0 ? Shape{5, 1} : Shape{5, 6}, 170 + i));
    }
    // Eleven 16-bit roundings of partial sums: loose in 16-bit.
    test.check(looseTolerances());
  }
}

TEST(CudaElementwise, VariadicIntegersAndNaN) {
  KILN_REQUIRE_GPU();
  Tensor a = randomTensor(DataType::kInt32, {3, 4}, 180, -50, 50);
  Tensor b = randomTensor(DataType::kInt32, {4}, 181, -50, 50);
  EwTest("Max", 13).input(a).input(b).check(fp32Only());
  EwTest("Min", 13).input(a).input(b).check(fp32Only());
  EwTest("Max", 13)
      .input(randomTensor(DataType::kUInt64, {3, 4}, 182, 0, 50))
      .input(randomTensor(DataType::kUInt64, {3, 4}, 183, 0, 50))
      .check(fp32Only());
  // NaN from either side propagates.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floatTensor({4}, {nan, 1.f, nan, -2.f});
  Tensor y = floatTensor({4}, {0.f, nan, nan, 3.f});
  EwTest("Max", 13).input(x).input(y).check();
  EwTest("Min", 13).input(x).input(y).check();
}

// ---- Where.

TEST(CudaElementwise, Where) {
  KILN_REQUIRE_GPU();
  Tensor cond = randomTensor(DataType::kBool, {2, 1, 4}, 190);
  EwTest("Where", 16)
      .input(cond)
      .input(randomFloats({3, 1}, 191))
      .input(randomFloats({2, 3, 4}, 192))
      .check();
  EwTest("Where", 16)
      .input(randomTensor(DataType::kBool, {2, 3, 4}, 193))
      .input(randomFloats({2, 3, 4}, 194))
      .constant(floatTensor({}, {-1e4f}))
      .check();
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kInt64, {3, 4}, 195, -1000, 1000))
      .input(randomTensor(DataType::kInt64, {2, 3, 1}, 196, -1000, 1000))
      .check(fp32Only());
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kBool, {3, 4}, 197))
      .input(randomTensor(DataType::kBool, {4}, 198))
      .check(fp32Only());
  EwTest("Where", 16)
      .input(cond)
      .input(randomTensor(DataType::kUInt8, {3, 4}, 199, 0, 255))
      .input(randomTensor(DataType::kUInt8, {4}, 200, 0, 255))
      .check(fp32Only());
}

// ---- Cast and CastLike.

EwTest castTo(DataType to) {
  EwTest test("Cast", 19);
  test.attr("to", static_cast<int64_t>(to));
  return test;
}

TEST(CudaElementwise, CastFromFloat) {
  KILN_REQUIRE_GPU();
  // Fractions and negatives: integer targets truncate toward zero; unsigned ones wrap.
  Tensor x = randomFloats({4, 25}, 210, -300, 300);
  for (DataType to : {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16,
                      DataType::kInt32, DataType::kUInt32, DataType::kInt64, DataType::kUInt64}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(x).check();
  }
  Tensor y = randomFloats({4, 25}, 211, -3, 3);
  for (DataType to :
       {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(y).check();
  }
  Tensor withZeros = floatTensor({6}, {0.f, -0.f, 0.5f, -2.f, 0.f, 1e-30f});
  castTo(DataType::kBool).input(withZeros).check();
  castTo(DataType::kBool).input(y).check();
}

TEST(CudaElementwise, CastFromIntegersAndBool) {
  KILN_REQUIRE_GPU();
  Tensor i64 = randomTensor(DataType::kInt64, {3, 20}, 220, -70000, 70000);
  for (DataType to :
       {DataType::kInt8, DataType::kUInt8, DataType::kInt16, DataType::kUInt16, DataType::kInt32,
        DataType::kUInt32, DataType::kUInt64, DataType::kBool, DataType::kFloat32,
        DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    SCOPED_TRACE(dataTypeName(to));
    castTo(to).input(i64).check(fp32Only());
  }
  Tensor u8 = randomTensor(DataType::kUInt8, {3, 20}, 221, 0, 255);
  castTo(DataType::kFloat32).input(u8).check(fp32Only());
  castTo(DataType::kInt8).input(u8).check(fp32Only());
  castTo(DataType::kInt64).input(u8).check(fp32Only());
  Tensor b = randomTensor(DataType::kBool, {3, 20}, 222);
  castTo(DataType::kFloat32).input(b).check(fp32Only());
  castTo(DataType::kInt32).input(b).check(fp32Only());
  castTo(DataType::kFloat16).input(b).check(fp32Only());
}

TEST(CudaElementwise, CastRoundTrips) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 30}, 230, -50, 50);
  for (DataType mid : {DataType::kInt32, DataType::kFloat16, DataType::kBFloat16,
                       DataType::kFloat64, DataType::kInt64}) {
    SCOPED_TRACE(dataTypeName(mid));
    auto first = castTo(mid).input(x).runCuda();
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    castTo(DataType::kFloat32).input(first.value()[0]).check(fp32Only());
  }
  // float64 -> half and bfloat16 round once (no double rounding through float).
  Tensor d = randomTensor(DataType::kFloat64, {3, 30}, 231, -100, 100);
  castTo(DataType::kFloat16).input(d).check(fp32Only());
  castTo(DataType::kBFloat16).input(d).check(fp32Only());
  castTo(DataType::kFloat32).input(d).check(fp32Only());
  castTo(DataType::kInt32).input(d).check(fp32Only());
}

TEST(CudaElementwise, CastLike) {
  KILN_REQUIRE_GPU();
  Tensor x = randomFloats({3, 7}, 240, -20, 20);
  EwTest("CastLike", 15).input(x).constant(int64Tensor({1}, {0})).check();
  EwTest("CastLike", 15)
      .input(randomTensor(DataType::kInt32, {3, 7}, 241, -20, 20))
      .constant(floatTensor({1}, {0.f}))
      .check();
  EwTest("CastLike", 15).input(x).constant(Tensor(DataType::kFloat16, {1})).check();
}

}  // namespace
}  // namespace kiln::test
