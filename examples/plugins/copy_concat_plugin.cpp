#include "copy_concat_plugin.h"

#include <new>

namespace kiln_examples {
namespace {

bool isLinear(const kp::DynamicTensorDesc& d) {
  return d.desc.format == kp::TensorFormat::kLinear;
}

}  // namespace

int32_t CopyConcatPlugin::getOutputDataTypes(kp::DataType* outputTypes, int32_t nbOutputs,
                                             const kp::DataType* inputTypes,
                                             int32_t nbInputs) const noexcept {
  if (nbInputs != 2 || nbOutputs != 2)
    return fail(kp::kStatusInvalidArgument, "CopyConcat takes 2 inputs and gives 2 outputs");
  if (inputTypes[0] != inputTypes[1])
    return fail(kp::kStatusInvalidArgument, "A and B must have the same type");
  outputTypes[0] = outputTypes[1] = inputTypes[0];
  return kp::kStatusSuccess;
}

int32_t CopyConcatPlugin::getOutputShapes(const kp::DimsExprs* inputs, int32_t nbInputs,
                                          kp::DimsExprs* outputs, int32_t nbOutputs,
                                          kp::IExprBuilder& exprBuilder) noexcept {
  if (nbInputs != 2 || nbOutputs != 2)
    return fail(kp::kStatusInvalidArgument, "CopyConcat takes 2 inputs and gives 2 outputs");
  if (inputs[0].nbDims < 1 || inputs[0].nbDims != inputs[1].nbDims)
    return fail(kp::kStatusInvalidArgument, "A and B need the same rank, at least 1");
  // Output 0 is B; output 1 is A with dimension 0 = a + b (the seeds' kSUM).
  outputs[0] = inputs[1];
  outputs[1] = inputs[0];
  outputs[1].d[0] = exprBuilder.operation(kp::DimOperation::kSum, *inputs[0].d[0], *inputs[1].d[0]);
  return kp::kStatusSuccess;
}

kp::IPlugin* CopyConcatPlugin::clone() const noexcept {
  return new (std::nothrow) CopyConcatPlugin();
}

// Position 0 sets the type; every other position must have it; all linear (the
// seeds' rule: look at lower positions only).
bool CopyConcatPlugin::supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut,
                                                 int32_t nbInputs, int32_t nbOutputs) noexcept {
  if (nbInputs != 2 || nbOutputs != 2 || pos < 0 || pos >= 4) return false;
  if (!isLinear(inOut[pos])) return false;
  return pos == 0 || inOut[pos].desc.type == inOut[0].desc.type;
}

int32_t CopyConcatPlugin::configurePlugin(const kp::DynamicTensorDesc* inputs, int32_t nbInputs,
                                          const kp::DynamicTensorDesc*, int32_t) noexcept {
  if (nbInputs != 2) return fail(kp::kStatusInvalidArgument, "CopyConcat takes 2 inputs");
  const kp::Dims& a = inputs[0].max;
  const kp::Dims& b = inputs[1].max;
  for (int32_t i = 1; i < a.nbDims && i < b.nbDims; ++i) {
    const bool fixed = inputs[0].min.d[i] == a.d[i] && inputs[1].min.d[i] == b.d[i];
    if (fixed && a.d[i] != b.d[i])
      return fail(kp::kStatusInvalidArgument, "A and B differ in a dimension after the first");
  }
  return kp::kStatusSuccess;
}

int32_t CopyConcatPlugin::onShapeChange(const kp::TensorDesc* inputs, int32_t nbInputs,
                                        const kp::TensorDesc*, int32_t nbOutputs) noexcept {
  if (nbInputs != 2 || nbOutputs != 2) return fail(kp::kStatusInvalidArgument, "wrong I/O count");
  for (int32_t i = 1; i < inputs[0].dims.nbDims; ++i)
    if (inputs[0].dims.d[i] != inputs[1].dims.d[i])
      return fail(kp::kStatusInvalidArgument, "A and B differ in a dimension after the first");
  m_bytesA = static_cast<size_t>(volume(inputs[0].dims)) * elementSize(inputs[0].type);
  m_bytesB = static_cast<size_t>(volume(inputs[1].dims)) * elementSize(inputs[1].type);
  return kp::kStatusSuccess;
}

int32_t CopyConcatPlugin::executeCpu(const kp::TensorDesc*, const kp::TensorDesc*,
                                     const void* const* inputs, void* const* outputs,
                                     void*) noexcept {
  auto* concat = static_cast<unsigned char*>(outputs[1]);
  if (m_bytesB) std::memcpy(outputs[0], inputs[1], m_bytesB);
  if (m_bytesA) std::memcpy(concat, inputs[0], m_bytesA);
  if (m_bytesB) std::memcpy(concat + m_bytesA, inputs[1], m_bytesB);
  return kp::kStatusSuccess;
}

int32_t CopyConcatPlugin::enqueue(const kp::TensorDesc*, const kp::TensorDesc*,
                                  const void* const* inputs, void* const* outputs, void*,
                                  void* cudaStream) noexcept {
#ifdef KILN_EXAMPLES_HAVE_CUDA
  const char* error = nullptr;
  const int32_t code = copyConcatOnStream(inputs[0], m_bytesA, inputs[1], m_bytesB, outputs[0],
                                          outputs[1], cudaStream, &error);
  return code == kp::kStatusSuccess ? code : fail(code, error);
#else
  (void)inputs, (void)outputs, (void)cudaStream;
  return failWithoutCuda();
#endif
}

kp::IPlugin* CopyConcatCreator::createPlugin(const char*, const kp::FieldCollection* fields,
                                             kp::Phase) noexcept {
  if (fields && fields->nbFields != 0) return fail("CopyConcat has no fields");
  kp::IPlugin* plugin = new (std::nothrow) CopyConcatPlugin();
  return plugin ? plugin : fail("out of memory");
}

}  // namespace kiln_examples
