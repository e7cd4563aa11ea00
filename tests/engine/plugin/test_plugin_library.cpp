// libkiln_test_plugins.so: plugins for the plugin tests (namespace kiln.test).
//   Faulty(X) -> Y, a copy of X, except where the string field `fault` says:
//     "throw_execute"   executeCpu throws (caught by guard(): kStatusException)
//     "fail_execute"    executeCpu returns kStatusInvalidArgument with a message
//     "negative_shape"  output dim 0 is X's dim 0 minus 1000
//     "rank9"           the output has 9 dimensions
//     "foreign_expr"    an output dim points at an expression the host did not make
//     "wrong_rows"      output dim 0 is X's dim 0 plus 1 (wrong against the model)
//     "fail_create"     the creator refuses to create it
//   AddWeights(X) -> Y = alpha * X + bias (bias: weights over X's last dimension)
// Every body that may throw runs inside kiln::plugin::guard().
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/plugin.h"

namespace {

namespace kp = kiln::plugin;

constexpr const char* kNamespace = "kiln.test";

int64_t volume(const kp::Dims& d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d.nbDims; ++i) n *= d.d[i];
  return n;
}

const kp::Field* findField(const kp::FieldCollection* fields, const char* name) {
  if (!fields || !fields->fields) return nullptr;
  for (int32_t i = 0; i < fields->nbFields; ++i)
    if (fields->fields[i].name && std::strcmp(fields->fields[i].name, name) == 0)
      return &fields->fields[i];
  return nullptr;
}

// Shared plumbing: one float32 input, one output of the same type, linear, no
// workspace, serialized fields as the derived class keeps them.
class SimplePlugin : public kp::IPlugin, public kp::IPluginBuild, public kp::IPluginRuntime {
 public:
  const char* getPluginVersion() const noexcept override { return "1"; }
  const char* getPluginNamespace() const noexcept override { return kNamespace; }
  int32_t getNbOutputs() const noexcept override { return 1; }
  int32_t getOutputDataTypes(kp::DataType* out, int32_t, const kp::DataType* in,
                             int32_t) const noexcept override {
    out[0] = in[0];
    return kp::kStatusSuccess;
  }
  int32_t getOutputShapes(const kp::DimsExprs* in, int32_t, kp::DimsExprs* out, int32_t,
                          kp::IExprBuilder&) noexcept override {
    out[0] = in[0];
    return kp::kStatusSuccess;
  }
  kp::IPluginBuild* getBuildCapability() noexcept override { return this; }
  kp::IPluginRuntime* getRuntimeCapability() noexcept override { return this; }
  const char* getLastError() const noexcept override { return m_error.c_str(); }
  void destroy() noexcept override { delete this; }
  bool supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut, int32_t,
                                 int32_t) noexcept override {
    return inOut[pos].desc.format == kp::TensorFormat::kLinear &&
           inOut[pos].desc.type == kp::DataType::kFloat32;
  }
  int32_t configurePlugin(const kp::DynamicTensorDesc*, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) noexcept override {
    return kp::kStatusSuccess;
  }
  size_t getWorkspaceSize(const kp::DynamicTensorDesc*, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) const noexcept override {
    return 0;
  }
  int32_t onShapeChange(const kp::TensorDesc* in, int32_t, const kp::TensorDesc*,
                        int32_t) noexcept override {
    m_count = volume(in[0].dims);
    m_inner = in[0].dims.nbDims ? in[0].dims.d[in[0].dims.nbDims - 1] : 1;
    return kp::kStatusSuccess;
  }
  bool hasCpuImplementation() const noexcept override { return true; }
  bool hasCudaImplementation() const noexcept override { return false; }
  int32_t enqueue(const kp::TensorDesc*, const kp::TensorDesc*, const void* const*, void* const*,
                  void*, void*) noexcept override {
    return fail("no CUDA implementation");
  }

 protected:
  int32_t fail(const char* message) noexcept {
    try {
      m_error = message;
    } catch (...) {
    }
    return kp::kStatusInvalidArgument;
  }
  auto setError() {
    return [this](const char* message) { m_error = message; };
  }
  std::string m_error;
  int64_t m_count = 0, m_inner = 1;
};

class FaultyPlugin final : public SimplePlugin {
 public:
  explicit FaultyPlugin(std::string fault) : m_fault(std::move(fault)) {
    m_field = {
        "fault", m_fault.data(), kp::FieldType::kString, static_cast<int64_t>(m_fault.size()), {},
        {}};
  }
  const char* getPluginName() const noexcept override { return "Faulty"; }
  kp::IPlugin* clone() const noexcept override { return new (std::nothrow) FaultyPlugin(m_fault); }
  int32_t getOutputShapes(const kp::DimsExprs* in, int32_t, kp::DimsExprs* out, int32_t,
                          kp::IExprBuilder& b) noexcept override {
    out[0] = in[0];
    if (m_fault == "negative_shape")
      out[0].d[0] = b.operation(kp::DimOperation::kSub, *in[0].d[0], *b.constant(1000));
    if (m_fault == "wrong_rows")
      out[0].d[0] = b.operation(kp::DimOperation::kSum, *in[0].d[0], *b.constant(1));
    if (m_fault == "rank9") out[0].nbDims = 9;
    if (m_fault == "foreign_expr") out[0].d[0] = reinterpret_cast<const kp::IDimExpr*>(&m_fault);
    return kp::kStatusSuccess;
  }
  const kp::FieldCollection* getFieldsToSerialize() noexcept override { return &m_fields; }
  int32_t executeCpu(const kp::TensorDesc*, const kp::TensorDesc*, const void* const* inputs,
                     void* const* outputs, void*) noexcept override {
    if (m_fault == "fail_execute") return fail("the input is not acceptable to Faulty");
    return kp::guard(
        [&] {
          if (m_fault == "throw_execute") throw std::runtime_error("Faulty threw on purpose");
          std::memcpy(outputs[0], inputs[0], static_cast<size_t>(m_count) * sizeof(float));
          return kp::kStatusSuccess;
        },
        setError());
  }

 private:
  std::string m_fault;
  kp::Field m_field;
  kp::FieldCollection m_fields{1, &m_field};
};

class AddWeightsPlugin final : public SimplePlugin {
 public:
  AddWeightsPlugin(float alpha, std::vector<float> bias) : m_alpha(alpha), m_bias(std::move(bias)) {
    m_out[0] = {"alpha", &m_alpha, kp::FieldType::kFloat32, 1, {}, {}};
    m_out[1] = {"bias",
                m_bias.data(),
                kp::FieldType::kWeights,
                static_cast<int64_t>(m_bias.size()),
                kp::DataType::kFloat32,
                {}};
    m_out[1].weightDims.nbDims = 1;
    m_out[1].weightDims.d[0] = static_cast<int64_t>(m_bias.size());
  }
  const char* getPluginName() const noexcept override { return "AddWeights"; }
  kp::IPlugin* clone() const noexcept override {
    try {
      return new AddWeightsPlugin(m_alpha, m_bias);
    } catch (...) {
      return nullptr;
    }
  }
  const kp::FieldCollection* getFieldsToSerialize() noexcept override { return &m_fields; }
  int32_t onShapeChange(const kp::TensorDesc* in, int32_t n, const kp::TensorDesc* out,
                        int32_t m) noexcept override {
    SimplePlugin::onShapeChange(in, n, out, m);
    if (m_inner != static_cast<int64_t>(m_bias.size()))
      return fail("bias length differs from the input's last dimension");
    return kp::kStatusSuccess;
  }
  int32_t executeCpu(const kp::TensorDesc*, const kp::TensorDesc*, const void* const* inputs,
                     void* const* outputs, void*) noexcept override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    for (int64_t i = 0; i < m_count; ++i) y[i] = m_alpha * x[i] + m_bias[i % m_inner];
    return kp::kStatusSuccess;
  }

 private:
  float m_alpha;
  std::vector<float> m_bias;
  kp::Field m_out[2];
  kp::FieldCollection m_fields{2, m_out};
};

// A creator with declared fields and a make() that may throw (run under guard()).
template <class Make>
class Creator final : public kp::IPluginCreator {
 public:
  Creator(const char* name, std::vector<kp::Field> declared, Make make)
      : m_name(name), m_declared(std::move(declared)), m_make(make) {
    m_collection = {static_cast<int32_t>(m_declared.size()), m_declared.data()};
  }
  const char* getPluginName() const noexcept override { return m_name; }
  const char* getPluginVersion() const noexcept override { return "1"; }
  const char* getPluginNamespace() const noexcept override { return kNamespace; }
  const kp::FieldCollection* getFieldNames() noexcept override { return &m_collection; }
  kp::IPlugin* createPlugin(const char*, const kp::FieldCollection* fields,
                            kp::Phase) noexcept override {
    kp::IPlugin* plugin = nullptr;
    kp::guard(
        [&] {
          plugin = m_make(fields);
          return kp::kStatusSuccess;
        },
        [this](const char* message) { m_error = message; });
    return plugin;
  }
  const char* getLastError() const noexcept override { return m_error.c_str(); }

 private:
  const char* m_name;
  std::vector<kp::Field> m_declared;
  kp::FieldCollection m_collection;
  Make m_make;
  std::string m_error;
};

kp::IPlugin* makeFaulty(const kp::FieldCollection* fields) {
  const kp::Field* fault = findField(fields, "fault");
  std::string text =
      fault ? std::string(static_cast<const char*>(fault->data), static_cast<size_t>(fault->length))
            : "";
  if (text == "fail_create") throw std::invalid_argument("Faulty was told not to be created");
  return new FaultyPlugin(text);
}

kp::IPlugin* makeAddWeights(const kp::FieldCollection* fields) {
  const kp::Field* alpha = findField(fields, "alpha");
  const kp::Field* bias = findField(fields, "bias");
  if (!alpha || !bias || bias->weightType != kp::DataType::kFloat32)
    throw std::invalid_argument("AddWeights needs alpha and float32 bias weights");
  const auto* b = static_cast<const float*>(bias->data);
  return new AddWeightsPlugin(*static_cast<const float*>(alpha->data),
                              std::vector<float>(b, b + bias->length));
}

}  // namespace

KILN_PLUGIN_LIBRARY(registrar) {
  using FaultyCreator = Creator<decltype(&makeFaulty)>;
  static FaultyCreator faulty("Faulty", {{"fault", nullptr, kp::FieldType::kString, -1, {}, {}}},
                              &makeFaulty);
  static FaultyCreator addWeights(
      "AddWeights",
      {{"alpha", nullptr, kp::FieldType::kFloat32, 1, {}, {}},
       {"bias", nullptr, kp::FieldType::kWeights, -1, kp::DataType::kFloat32, {}}},
      &makeAddWeights);
  return registrar->registerCreator(faulty, nullptr) &&
                 registrar->registerCreator(addWeights, nullptr)
             ? 0
             : 1;
}
