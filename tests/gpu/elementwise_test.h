// What the elementwise family's GPU tests share (test_cuda_elementwise.cpp: unary ops and
// activations; test_cuda_elementwise_binary.cpp: arithmetic, comparisons, logic, variadic,
// Where, Cast): EwTest (GpuOpTest plus a check that the node ran on the GPU), the
// tolerances of fast-growing ops, integer-valued float data and unary case tables.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_op_test.h"
#include "kiln/cuda_runtime.h"
#include "kiln/graph.h"

namespace kiln::test::elementwise {

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
inline std::vector<PrecisionTolerance> looseTolerances() {
  return {{Precision::kFloat32, 1e-5, 1e-5},
          {Precision::kFloat16, 5e-3, 5e-3},
          {Precision::kBFloat16, 3e-2, 3e-2}};
}

inline const Shape kShape = {2, 3, 4};

// Integer-valued float32 data, so that comparisons find equal elements.
inline Tensor smallIntegerFloats(const Shape& shape, uint32_t seed) {
  return castTensor(randomTensor(DataType::kInt32, shape, seed, -3, 3), DataType::kFloat32);
}

struct UnaryCase {
  const char* op;
  int opset;
  double lo;
  double hi;
  bool loose;  // looseTolerances() in 16-bit
};

inline void checkUnaryCases(const std::vector<UnaryCase>& cases) {
  uint32_t seed = 100;
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.op);
    EwTest(c.op, c.opset)
        .input(randomFloats({3, 5, 7}, seed++, c.lo, c.hi))
        .check(c.loose ? looseTolerances() : defaultTolerances());
  }
}

}  // namespace kiln::test::elementwise
