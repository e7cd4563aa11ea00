// CopyConcat (namespace kiln.examples, version 1): the seeds' two-input,
// two-output dynamic-shape plugin.
//   inputs:  A [a, d1..dk], B [b, d1..dk] (same type, same trailing dims)
//   outputs: 0: a copy of B            [b, d1..dk]
//            1: A and B concatenated along dimension 0   [a + b, d1..dk]
// Any element type, linear format; no fields. CPU: memcpy; CUDA: cudaMemcpyAsync on
// the stream (copy_concat_cuda.cu).
#pragma once

#include "plugin_base.h"

namespace kiln_examples {

inline constexpr PluginIdentity kCopyConcatIdentity{"CopyConcat", "1", "kiln.examples"};

// Name, version, capabilities, getLastError(), destroy(), no workspace and which
// implementations exist come from PluginBase (plugin_base.h).
class CopyConcatPlugin final : public PluginBase {
 public:
  CopyConcatPlugin() : PluginBase(kCopyConcatIdentity) {}

  // core
  int32_t getNbOutputs() const noexcept override { return 2; }
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
  const kp::FieldCollection* getFieldsToSerialize() noexcept override { return &m_noFields; }

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
  kp::FieldCollection m_noFields{0, nullptr};
  size_t m_bytesA = 0, m_bytesB = 0;  // set by onShapeChange
};

class CopyConcatCreator final : public CreatorBase {
 public:
  CopyConcatCreator() : CreatorBase(kCopyConcatIdentity) {}
  const kp::FieldCollection* getFieldNames() noexcept override { return &m_fields; }
  kp::IPlugin* createPlugin(const char* layerName, const kp::FieldCollection* fields,
                            kp::Phase phase) noexcept override;

 private:
  kp::FieldCollection m_fields{0, nullptr};
};

// The CUDA part (copy_concat_cuda.cu): out0 <- B, out1 <- A then B. Returns a
// kStatus code; `error` gets cudaGetErrorString on failure.
int32_t copyConcatOnStream(const void* a, size_t bytesA, const void* b, size_t bytesB,
                           void* copyOut, void* concatOut, void* stream, const char** error);

}  // namespace kiln_examples
