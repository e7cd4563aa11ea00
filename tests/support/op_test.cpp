#include "support/op_test.h"

#include <cmath>
#include <random>

#include "backends/cpu/invoke_kernel.h"

namespace kiln::test {

OpTest::OpTest(const std::string& opType, int opset, const std::string& domain) {
  m_node.opType = opType;
  m_node.domain = domain;
  m_node.opset = opset;
  m_node.name = opType + "_test";
}

OpTest& OpTest::attr(const std::string& name, int64_t value) {
  Attribute a;
  a.kind = Attribute::Kind::kInt;
  a.i = value;
  m_node.attributes[name] = a;
  return *this;
}

OpTest& OpTest::attr(const std::string& name, float value) {
  Attribute a;
  a.kind = Attribute::Kind::kFloat;
  a.f = value;
  m_node.attributes[name] = a;
  return *this;
}

OpTest& OpTest::attr(const std::string& name, const std::string& value) {
  Attribute a;
  a.kind = Attribute::Kind::kString;
  a.s = value;
  m_node.attributes[name] = a;
  return *this;
}

OpTest& OpTest::attr(const std::string& name, const std::vector<int64_t>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kInts;
  a.ints = values;
  m_node.attributes[name] = a;
  return *this;
}

OpTest& OpTest::attr(const std::string& name, const std::vector<float>& values) {
  Attribute a;
  a.kind = Attribute::Kind::kFloats;
  a.floats = values;
  m_node.attributes[name] = a;
  return *this;
}

OpTest& OpTest::input(const Tensor& tensor) {
  m_node.inputs.push_back("in" + std::to_string(m_node.inputs.size()));
  m_inputs.push_back(tensor);
  return *this;
}

OpTest& OpTest::missingInput() {
  m_node.inputs.push_back("");
  m_inputs.emplace_back();
  return *this;
}

Result<std::vector<Tensor>> OpTest::run(int outputCount) {
  m_node.outputs.clear();
  for (int i = 0; i < outputCount; ++i) m_node.outputs.push_back("out" + std::to_string(i));
  const cpu::KernelEntry* entry =
      cpu::builtinKernels().find(m_node.domain, m_node.opType, m_node.opset);
  if (!entry) return unsupported("no CPU kernel for " + m_node.opType);
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : m_inputs) inputs.push_back(t.defined() ? &t : nullptr);
  cpu::SubgraphRunner noSubgraphs = [](const Graph&, const std::vector<Tensor>&,
                                       std::vector<Tensor>*) {
    return unsupported("subgraphs are not available in OpTest");
  };
  cpu::KernelContext context(m_node, inputs, noSubgraphs);
  Status status = cpu::invokeKernel(entry->fn, context);
  if (!status.isOk()) return status;
  return context.outputs();
}

Tensor randomTensor(DataType type, const Shape& shape, uint32_t seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor f64(DataType::kFloat64, shape);
  double* p = f64.data<double>();
  for (int64_t i = 0; i < f64.numel(); ++i) {
    double v = dist(rng);
    if (isInteger(type)) v = std::round(v);
    if (type == DataType::kBool) v = v > (lo + hi) / 2 ? 1.0 : 0.0;
    p[i] = v;
  }
  return castTensor(f64, type);
}

Tensor floatTensor(const Shape& shape, const std::vector<float>& values) {
  return Tensor::fromVector(DataType::kFloat32, shape, values);
}

Tensor int64Tensor(const Shape& shape, const std::vector<int64_t>& values) {
  return Tensor::fromVector(DataType::kInt64, shape, values);
}

void expectTensorNear(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  ASSERT_EQ(actual.type(), expected.type()) << dataTypeName(actual.type());
  ASSERT_EQ(actual.shape(), expected.shape())
      << shapeToString(actual.shape()) << " vs " << shapeToString(expected.shape());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = actual.valueAsDouble(i), e = expected.valueAsDouble(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    if (std::isinf(a) && a == e) continue;
    ASSERT_LE(std::fabs(a - e), atol + rtol * std::fabs(e))
        << "element " << i << ": " << a << " vs " << e;
  }
}

Tensor stringTensor(const Shape& shape, const std::vector<std::string>& values) {
  Tensor t(DataType::kString, shape);
  t.strings() = values;
  return t;
}

}  // namespace kiln::test
