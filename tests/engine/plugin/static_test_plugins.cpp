// Plugins compiled into the test program and registered with
// KILN_REGISTER_PLUGIN_CREATOR (namespace kiln.test.static):
//   RangeProbe(X) -> Y = X (float32 only, linear); records every configurePlugin()
//     input range in g_rangeProbeConfigs so tests see the profile's min/opt/max.
//   NhwcScale(X) -> Y[n, c, h, w] = X[n, c, h, w] * (c + 1); takes 4-D float32 in
//     channels-last format only, so the host must hand it NHWC buffers.
#include <cstring>
#include <new>

#include "engine/plugin/static_test_plugins.h"

namespace kiln::test {

std::vector<plugin::DynamicTensorDesc> g_rangeProbeConfigs;

namespace {

namespace kp = kiln::plugin;

class ProbeBase : public kp::IPlugin, public kp::IPluginBuild, public kp::IPluginRuntime {
 public:
  const char* getPluginVersion() const noexcept override { return "1"; }
  const char* getPluginNamespace() const noexcept override { return "kiln.test.static"; }
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
  const char* getLastError() const noexcept override { return ""; }
  void destroy() noexcept override { delete this; }
  const kp::FieldCollection* getFieldsToSerialize() noexcept override { return &m_none; }
  size_t getWorkspaceSize(const kp::DynamicTensorDesc*, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) const noexcept override {
    return 64;  // asks for scratch so the workspace path is exercised
  }
  int32_t onShapeChange(const kp::TensorDesc* in, int32_t, const kp::TensorDesc*,
                        int32_t) noexcept override {
    m_dims = in[0].dims;
    return kp::kStatusSuccess;
  }
  bool hasCpuImplementation() const noexcept override { return true; }
  bool hasCudaImplementation() const noexcept override { return false; }
  int32_t enqueue(const kp::TensorDesc*, const kp::TensorDesc*, const void* const*, void* const*,
                  void*, void*) noexcept override {
    return kp::kStatusUnsupported;
  }

 protected:
  kp::FieldCollection m_none{0, nullptr};
  kp::Dims m_dims;
};

class RangeProbe final : public ProbeBase {
 public:
  const char* getPluginName() const noexcept override { return "RangeProbe"; }
  kp::IPlugin* clone() const noexcept override { return new (std::nothrow) RangeProbe(); }
  bool supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut, int32_t,
                                 int32_t) noexcept override {
    return inOut[pos].desc.type == kp::DataType::kFloat32 &&
           inOut[pos].desc.format == kp::TensorFormat::kLinear;
  }
  int32_t configurePlugin(const kp::DynamicTensorDesc* in, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) noexcept override {
    g_rangeProbeConfigs.push_back(in[0]);
    return kp::kStatusSuccess;
  }
  int32_t executeCpu(const kp::TensorDesc*, const kp::TensorDesc*, const void* const* inputs,
                     void* const* outputs, void* workspace) noexcept override {
    if (!workspace) return kp::kStatusInternal;
    int64_t n = 1;
    for (int32_t i = 0; i < m_dims.nbDims; ++i) n *= m_dims.d[i];
    std::memcpy(outputs[0], inputs[0], static_cast<size_t>(n) * sizeof(float));
    return kp::kStatusSuccess;
  }
};

class NhwcScale final : public ProbeBase {
 public:
  const char* getPluginName() const noexcept override { return "NhwcScale"; }
  kp::IPlugin* clone() const noexcept override { return new (std::nothrow) NhwcScale(); }
  bool supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut, int32_t,
                                 int32_t) noexcept override {
    return inOut[pos].desc.type == kp::DataType::kFloat32 && inOut[pos].desc.dims.nbDims == 4 &&
           inOut[pos].desc.format == kp::TensorFormat::kChannelsLast;
  }
  int32_t configurePlugin(const kp::DynamicTensorDesc*, int32_t, const kp::DynamicTensorDesc*,
                          int32_t) noexcept override {
    return kp::kStatusSuccess;
  }
  // NHWC memory: the channel is the fastest-moving index.
  int32_t executeCpu(const kp::TensorDesc*, const kp::TensorDesc*, const void* const* inputs,
                     void* const* outputs, void*) noexcept override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const int64_t c = m_dims.d[1], n = m_dims.d[0] * m_dims.d[2] * m_dims.d[3] * c;
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * static_cast<float>(i % c + 1);
    return kp::kStatusSuccess;
  }
};

template <class Plugin>
class StaticCreator final : public kp::IPluginCreator {
 public:
  const char* getPluginName() const noexcept override { return m_probe.getPluginName(); }
  const char* getPluginVersion() const noexcept override { return "1"; }
  const char* getPluginNamespace() const noexcept override { return "kiln.test.static"; }
  const kp::FieldCollection* getFieldNames() noexcept override { return &m_none; }
  kp::IPlugin* createPlugin(const char*, const kp::FieldCollection*, kp::Phase) noexcept override {
    return new (std::nothrow) Plugin();
  }
  const char* getLastError() const noexcept override { return "out of memory"; }

 private:
  Plugin m_probe;
  kp::FieldCollection m_none{0, nullptr};
};

}  // namespace

}  // namespace kiln::test

KILN_REGISTER_PLUGIN_CREATOR(kiln::test::StaticCreator<kiln::test::RangeProbe>);
KILN_REGISTER_PLUGIN_CREATOR(kiln::test::StaticCreator<kiln::test::NhwcScale>);
