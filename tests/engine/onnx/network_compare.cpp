#include "network_compare.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "kiln/onnx_import.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

bool isAnonymous(const DimExpr& dim) {
  return dim.isSymbol() && dim.symbolName().rfind("unk__", 0) == 0;
}

void expectSameValueInfo(const ValueInfo& actual, const ValueInfo& expected) {
  SCOPED_TRACE("value '" + expected.name + "'");
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.type, expected.type);
  EXPECT_EQ(actual.hasShape, expected.hasShape);
  ASSERT_EQ(actual.shape.size(), expected.shape.size());
  for (size_t i = 0; i < expected.shape.size(); ++i) {
    const DimExpr& a = actual.shape[i];
    const DimExpr& e = expected.shape[i];
    if (isAnonymous(e))
      EXPECT_TRUE(isAnonymous(a)) << "dim " << i << ": " << a.toString();
    else
      EXPECT_EQ(a.toString(), e.toString()) << "dim " << i;
  }
}

void expectSameTensor(const Tensor& actual, const Tensor& expected, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(actual.type(), expected.type());
  ASSERT_EQ(actual.shape(), expected.shape());
  if (expected.type() == DataType::kString) {
    EXPECT_EQ(actual.strings(), expected.strings());
    return;
  }
  ASSERT_EQ(actual.byteSize(), expected.byteSize());
  if (expected.byteSize() == 0) return;
  EXPECT_EQ(std::memcmp(actual.rawData(), expected.rawData(), expected.byteSize()), 0)
      << "bytes differ";
}

bool sameBits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expectSameAttribute(const Attribute& actual, const Attribute& expected,
                         const std::string& what) {
  SCOPED_TRACE(what);
  using K = Attribute::Kind;
  ASSERT_EQ(actual.kind, expected.kind);
  switch (expected.kind) {
    case K::kFloat:
      EXPECT_TRUE(sameBits(actual.f, expected.f)) << actual.f;
      break;
    case K::kInt:
      EXPECT_EQ(actual.i, expected.i);
      break;
    case K::kString:
      EXPECT_EQ(actual.s, expected.s);
      break;
    case K::kFloats:
      ASSERT_EQ(actual.floats.size(), expected.floats.size());
      for (size_t i = 0; i < expected.floats.size(); ++i) {
        EXPECT_TRUE(sameBits(actual.floats[i], expected.floats[i])) << "float " << i;
      }
      break;
    case K::kInts:
      EXPECT_EQ(actual.ints, expected.ints);
      break;
    case K::kStrings:
      EXPECT_EQ(actual.strings, expected.strings);
      break;
    case K::kTensor:
      expectSameTensor(actual.t, expected.t, "tensor");
      break;
    case K::kTensors:
      ASSERT_EQ(actual.tensors.size(), expected.tensors.size());
      for (size_t i = 0; i < expected.tensors.size(); ++i) {
        expectSameTensor(actual.tensors[i], expected.tensors[i], "tensor " + std::to_string(i));
      }
      break;
    case K::kGraph:
      ASSERT_TRUE(actual.g && expected.g);
      expectSameGraph(*actual.g, *expected.g);
      break;
    case K::kGraphs:
      ASSERT_EQ(actual.graphs.size(), expected.graphs.size());
      for (size_t i = 0; i < expected.graphs.size(); ++i) {
        ASSERT_TRUE(actual.graphs[i] && expected.graphs[i]);
        expectSameGraph(*actual.graphs[i], *expected.graphs[i]);
      }
      break;
  }
}

void expectSameNode(const Node& actual, const Node& expected) {
  SCOPED_TRACE(expected.describe());
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.opType, expected.opType);
  EXPECT_EQ(actual.domain, expected.domain);
  EXPECT_EQ(actual.opset, expected.opset);
  EXPECT_EQ(actual.inputs, expected.inputs);
  EXPECT_EQ(actual.outputs, expected.outputs);
  ASSERT_EQ(actual.attributes.size(), expected.attributes.size());
  for (const auto& [key, attr] : expected.attributes) {
    auto it = actual.attributes.find(key);
    ASSERT_NE(it, actual.attributes.end()) << "attribute '" << key << "' is missing";
    expectSameAttribute(it->second, attr, "attribute '" + key + "'");
  }
}

void expectSameValueInfos(const std::vector<ValueInfo>& actual,
                          const std::vector<ValueInfo>& expected, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) expectSameValueInfo(actual[i], expected[i]);
}

}  // namespace

void expectSameGraph(const Graph& actual, const Graph& expected) {
  SCOPED_TRACE("graph '" + expected.name + "'");
  EXPECT_EQ(actual.name, expected.name);
  ASSERT_EQ(actual.nodes.size(), expected.nodes.size());
  for (size_t i = 0; i < expected.nodes.size(); ++i)
    expectSameNode(actual.nodes[i], expected.nodes[i]);
  expectSameValueInfos(actual.inputs, expected.inputs, "inputs");
  expectSameValueInfos(actual.outputs, expected.outputs, "outputs");
  ASSERT_EQ(actual.valueInfo.size(), expected.valueInfo.size());
  for (const auto& [name, info] : expected.valueInfo) {
    auto it = actual.valueInfo.find(name);
    ASSERT_NE(it, actual.valueInfo.end()) << "value_info '" << name << "' is missing";
    expectSameValueInfo(it->second, info);
  }
  ASSERT_EQ(actual.initializers.size(), expected.initializers.size());
  for (const auto& [name, tensor] : expected.initializers) {
    auto it = actual.initializers.find(name);
    ASSERT_NE(it, actual.initializers.end()) << "initializer '" << name << "' is missing";
    expectSameTensor(it->second, tensor, "initializer '" + name + "'");
  }
}

void expectSameNetwork(const Network& actual, const Network& expected) {
  EXPECT_EQ(actual.opsets, expected.opsets);
  EXPECT_EQ(actual.irVersion, expected.irVersion);
  EXPECT_EQ(actual.producerName, expected.producerName);
  EXPECT_EQ(actual.producerVersion, expected.producerVersion);
  expectSameGraph(actual.graph, expected.graph);
}

void expectSameOutputs(const std::vector<NamedTensor>& actual,
                       const std::vector<NamedTensor>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    expectSameTensor(actual[i].tensor, expected[i].tensor, "output '" + expected[i].name + "'");
  }
}

bool anyNonZero(const std::vector<NamedTensor>& outputs) {
  for (const NamedTensor& out : outputs) {
    const Tensor& t = out.tensor;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.type() == DataType::kString ? !t.strings()[i].empty() : t.valueAsDouble(i) != 0.0) {
        return true;
      }
    }
  }
  return false;
}

std::map<std::string, Tensor> randomInputs(const Graph& graph, uint32_t seed, int64_t dynamicDim) {
  std::map<std::string, Tensor> inputs;
  for (const ValueInfo& in : graph.inputs) {
    Shape shape;
    for (const DimExpr& d : in.shape) shape.push_back(d.isConst() ? d.constValue() : dynamicDim);
    const bool integer = isInteger(in.type);
    Tensor t = randomTensor(in.type, shape, seed + 17 * static_cast<uint32_t>(inputs.size()),
                            integer ? 1.0 : -1.0, integer ? 5.0 : 1.0);
    if (in.type == DataType::kBool) std::memset(t.rawData(), seed % 2, t.byteSize());
    inputs[in.name] = t;
  }
  return inputs;
}

std::map<std::string, Tensor> randomInputsLike(const std::string& modelDir, const Graph& graph,
                                               uint32_t seed) {
  std::map<std::string, Tensor> inputs;
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    const std::string path = modelDir + "/test_data_set_0/input_" + std::to_string(k) + ".pb";
    std::string name;
    Result<Tensor> reference = readTensorProtoFile(path, &name);
    if (!reference.isOk()) {
      ADD_FAILURE() << reference.status().toString();
      return inputs;
    }
    if (name.empty()) name = graph.inputs[k].name;
    const Tensor& t = reference.value();
    inputs[name] = isFloatingPoint(t.type()) ? randomTensor(t.type(), t.shape(), seed++) : t;
  }
  return inputs;
}

}  // namespace kiln::test
