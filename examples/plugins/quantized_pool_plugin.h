// QuantizedPool (namespace kiln.examples, version 1): 2-D max or average pooling with
// INT8 I/O, after the seeds' PoolPlugin.
//   input X [N, C, H, W] -> output Y [N, C, floor((H - kh) / sh) + 1, floor((W - kw) / sw) + 1]
//   types: float32, float16 or int8, the same for X and Y, linear format
//   INT8: X and Y carry scales (from the QuantizeLinear before and the
//         DequantizeLinear after); Y = saturate(rint(pool(X) * scaleX / scaleY))
// Fields (ONNX attributes):
//   kernel_shape  int64[2]  required        window height, width
//   strides       int64[2]  = kernel_shape  step height, width
//   mode          string    "max"           "max" or "average"
// All three are serialized into the plan. CPU: a loop; CUDA: one thread per output
// element (quantized_pool_cuda.cu); both use quantized_pool_math.h.
#pragma once

#include <string>

#include "plugin_base.h"
#include "quantized_pool_math.h"

namespace kiln_examples {

struct PoolSettings {
  int64_t kernel[2] = {1, 1};
  int64_t strides[2] = {1, 1};
  std::string mode = "max";
};

inline constexpr PluginIdentity kQuantizedPoolIdentity{"QuantizedPool", "1", "kiln.examples"};

// Name, version, capabilities, getLastError(), destroy(), no workspace and which
// implementations exist come from PluginBase (plugin_base.h).
class QuantizedPoolPlugin final : public PluginBase {
 public:
  explicit QuantizedPoolPlugin(PoolSettings settings);

  // core
  int32_t getNbOutputs() const noexcept override { return 1; }
  int32_t getOutputDataTypes(kp::DataType* outputTypes, int32_t nbOutputs,
                             const kp::DataType* inputTypes,
                             int32_t nbInputs) const noexcept override;
  int32_t getOutputShapes(const kp::DimsExprs* inputs, int32_t nbInputs, kp::DimsExprs* outputs,
                          int32_t nbOutputs, kp::IExprBuilder& exprBuilder) noexcept override;
  kp::IPlugin* clone() const noexcept override;

  // build
  bool supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut, int32_t nbInputs,
                                 int32_t nbOutputs) noexcept override;
  int32_t configurePlugin(const kp::DynamicTensorDesc* inputs, int32_t nbInputs,
                          const kp::DynamicTensorDesc* outputs,
                          int32_t nbOutputs) noexcept override;
  const kp::FieldCollection* getFieldsToSerialize() noexcept override;

  // runtime
  int32_t onShapeChange(const kp::TensorDesc* inputs, int32_t nbInputs,
                        const kp::TensorDesc* outputs, int32_t nbOutputs) noexcept override;
  int32_t executeCpu(const kp::TensorDesc* inputDesc, const kp::TensorDesc* outputDesc,
                     const void* const* inputs, void* const* outputs,
                     void* workspace) noexcept override;
  int32_t enqueue(const kp::TensorDesc* inputDesc, const kp::TensorDesc* outputDesc,
                  const void* const* inputs, void* const* outputs, void* workspace,
                  void* cudaStream) noexcept override;

 private:
  // INT8 I/O needs both scales.
  int32_t checkScales(kp::DataType type, float inScale, float outScale) const noexcept;

  PoolSettings m_settings;
  PoolJob m_job;  // set by onShapeChange
  kp::DataType m_type = kp::DataType::kFloat32;
  kp::Field m_serialized[3];
  kp::FieldCollection m_serializedCollection{3, m_serialized};
};

class QuantizedPoolCreator final : public CreatorBase {
 public:
  QuantizedPoolCreator();
  const kp::FieldCollection* getFieldNames() noexcept override { return &m_collection; }
  kp::IPlugin* createPlugin(const char* layerName, const kp::FieldCollection* fields,
                            kp::Phase phase) noexcept override;

 private:
  kp::Field m_fields[3];
  kp::FieldCollection m_collection{3, m_fields};
};

// The CUDA part (quantized_pool_cuda.cu): launches the pooling kernel on `stream`.
int32_t quantizedPoolOnStream(const PoolJob& job, kp::DataType type, const void* input,
                              void* output, void* stream, const char** error);

}  // namespace kiln_examples
