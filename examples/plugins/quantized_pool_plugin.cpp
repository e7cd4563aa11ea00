#include "quantized_pool_plugin.h"

#include <new>
#include <stdexcept>

namespace kiln_examples {
namespace {

bool takesType(kp::DataType t) {
  return t == kp::DataType::kFloat32 || t == kp::DataType::kFloat16 || t == kp::DataType::kInt8;
}

// Reads the fields (both phases carry the same three); throws std::invalid_argument
// with the reason, which guard() turns into the creator's error.
PoolSettings parseSettings(const kp::FieldCollection* fields) {
  PoolSettings s;
  const kp::Field* kernel = findField(fields, "kernel_shape");
  if (!kernel || kernel->type != kp::FieldType::kInt64 || kernel->length != 2)
    throw std::invalid_argument("QuantizedPool needs kernel_shape: two int64 values");
  const auto* k = static_cast<const int64_t*>(kernel->data);
  s.kernel[0] = s.strides[0] = k[0];
  s.kernel[1] = s.strides[1] = k[1];
  if (const kp::Field* strides = findField(fields, "strides")) {
    if (strides->type != kp::FieldType::kInt64 || strides->length != 2)
      throw std::invalid_argument("QuantizedPool strides must be two int64 values");
    s.strides[0] = static_cast<const int64_t*>(strides->data)[0];
    s.strides[1] = static_cast<const int64_t*>(strides->data)[1];
  }
  if (const kp::Field* mode = findField(fields, "mode")) {
    if (mode->type != kp::FieldType::kString)
      throw std::invalid_argument("QuantizedPool mode must be a string");
    s.mode.assign(static_cast<const char*>(mode->data), static_cast<size_t>(mode->length));
  }
  if (s.mode != "max" && s.mode != "average")
    throw std::invalid_argument("QuantizedPool mode '" + s.mode + "' is not max or average");
  if (s.kernel[0] < 1 || s.kernel[1] < 1 || s.strides[0] < 1 || s.strides[1] < 1)
    throw std::invalid_argument("QuantizedPool kernel_shape and strides must be positive");
  return s;
}

template <class T, class ToFloat, class FromFloat>
void poolOnHost(const PoolJob& job, const T* in, T* out, ToFloat toFloat, FromFloat fromFloat) {
  auto load = [&](int64_t i) { return toFloat(in[i]); };
  for (int64_t plane = 0; plane < job.n * job.c; ++plane)
    for (int64_t oy = 0; oy < job.outH; ++oy)
      for (int64_t ox = 0; ox < job.outW; ++ox)
        out[(plane * job.outH + oy) * job.outW + ox] =
            fromFloat(poolWindow(job, load, plane, oy, ox));
}

}  // namespace

QuantizedPoolPlugin::QuantizedPoolPlugin(PoolSettings settings)
    : PluginBase(kQuantizedPoolIdentity), m_settings(std::move(settings)) {
  m_serialized[0] = {"kernel_shape", m_settings.kernel, kp::FieldType::kInt64, 2, {}, {}};
  m_serialized[1] = {"strides", m_settings.strides, kp::FieldType::kInt64, 2, {}, {}};
  m_serialized[2] = {"mode",
                     m_settings.mode.data(),
                     kp::FieldType::kString,
                     static_cast<int64_t>(m_settings.mode.size()),
                     {},
                     {}};
}

int32_t QuantizedPoolPlugin::getOutputDataTypes(kp::DataType* outputTypes, int32_t nbOutputs,
                                                const kp::DataType* inputTypes,
                                                int32_t nbInputs) const noexcept {
  if (nbInputs != 1 || nbOutputs != 1)
    return fail(kp::kStatusInvalidArgument, "QuantizedPool takes 1 input and gives 1 output");
  outputTypes[0] = inputTypes[0];
  return kp::kStatusSuccess;
}

// [N, C, floor((H - kh) / sh) + 1, floor((W - kw) / sw) + 1]
int32_t QuantizedPoolPlugin::getOutputShapes(const kp::DimsExprs* inputs, int32_t nbInputs,
                                             kp::DimsExprs* outputs, int32_t nbOutputs,
                                             kp::IExprBuilder& b) noexcept {
  if (nbInputs != 1 || nbOutputs != 1 || inputs[0].nbDims != 4)
    return fail(kp::kStatusInvalidArgument, "QuantizedPool takes one 4-D (NCHW) input");
  outputs[0] = inputs[0];
  const kp::IDimExpr* one = b.constant(1);
  for (int axis = 0; axis < 2; ++axis) {
    const kp::IDimExpr* span = b.operation(kp::DimOperation::kSub, *inputs[0].d[2 + axis],
                                           *b.constant(m_settings.kernel[axis]));
    const kp::IDimExpr* steps =
        b.operation(kp::DimOperation::kFloorDiv, *span, *b.constant(m_settings.strides[axis]));
    outputs[0].d[2 + axis] = b.operation(kp::DimOperation::kSum, *steps, *one);
  }
  return kp::kStatusSuccess;
}

kp::IPlugin* QuantizedPoolPlugin::clone() const noexcept {
  try {
    return new QuantizedPoolPlugin(m_settings);
  } catch (...) {
    return nullptr;
  }
}

// Float32, float16 or int8 at position 0; the output takes the input's type.
bool QuantizedPoolPlugin::supportsFormatCombination(int32_t pos, const kp::DynamicTensorDesc* inOut,
                                                    int32_t nbInputs, int32_t nbOutputs) noexcept {
  if (nbInputs != 1 || nbOutputs != 1 || pos < 0 || pos > 1) return false;
  if (inOut[pos].desc.format != kp::TensorFormat::kLinear) return false;
  return pos == 0 ? takesType(inOut[0].desc.type) : inOut[1].desc.type == inOut[0].desc.type;
}

int32_t QuantizedPoolPlugin::checkScales(kp::DataType type, float inScale,
                                         float outScale) const noexcept {
  if (type == kp::DataType::kInt8 && (!(inScale > 0.f) || !(outScale > 0.f)))
    return fail(kp::kStatusInvalidArgument,
                "INT8 I/O needs the input and output scales: put a QuantizeLinear (zero point 0) "
                "before QuantizedPool and a DequantizeLinear after it");
  return kp::kStatusSuccess;
}

int32_t QuantizedPoolPlugin::configurePlugin(const kp::DynamicTensorDesc* inputs, int32_t nbInputs,
                                             const kp::DynamicTensorDesc* outputs,
                                             int32_t nbOutputs) noexcept {
  if (nbInputs != 1 || nbOutputs != 1)
    return fail(kp::kStatusInvalidArgument, "QuantizedPool takes 1 input and gives 1 output");
  if (inputs[0].min.d[2] < m_settings.kernel[0] || inputs[0].min.d[3] < m_settings.kernel[1])
    return fail(kp::kStatusInvalidArgument,
                "the profile's smallest input is smaller than the pooling window");
  return checkScales(inputs[0].desc.type, inputs[0].desc.scale, outputs[0].desc.scale);
}

const kp::FieldCollection* QuantizedPoolPlugin::getFieldsToSerialize() noexcept {
  return &m_serializedCollection;
}

int32_t QuantizedPoolPlugin::onShapeChange(const kp::TensorDesc* inputs, int32_t nbInputs,
                                           const kp::TensorDesc* outputs,
                                           int32_t nbOutputs) noexcept {
  if (nbInputs != 1 || nbOutputs != 1 || inputs[0].dims.nbDims != 4)
    return fail(kp::kStatusInvalidArgument, "QuantizedPool takes one 4-D (NCHW) input");
  if (int32_t code = checkScales(inputs[0].type, inputs[0].scale, outputs[0].scale)) return code;
  const kp::Dims& in = inputs[0].dims;
  m_type = inputs[0].type;
  m_job.n = in.d[0];
  m_job.c = in.d[1];
  m_job.h = in.d[2];
  m_job.w = in.d[3];
  m_job.outH = outputs[0].dims.d[2];
  m_job.outW = outputs[0].dims.d[3];
  m_job.kernelH = m_settings.kernel[0];
  m_job.kernelW = m_settings.kernel[1];
  m_job.strideH = m_settings.strides[0];
  m_job.strideW = m_settings.strides[1];
  m_job.average = m_settings.mode == "average";
  m_job.inScale = inputs[0].scale;
  m_job.outScale = outputs[0].scale;
  return kp::kStatusSuccess;
}

int32_t QuantizedPoolPlugin::executeCpu(const kp::TensorDesc*, const kp::TensorDesc*,
                                        const void* const* inputs, void* const* outputs,
                                        void*) noexcept {
  const PoolJob job = m_job;
  switch (m_type) {
    case kp::DataType::kFloat32:
      poolOnHost(
          job, static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]),
          [](float v) { return v; }, [](float v) { return v; });
      return kp::kStatusSuccess;
    case kp::DataType::kFloat16:
      poolOnHost(job, static_cast<const uint16_t*>(inputs[0]), static_cast<uint16_t*>(outputs[0]),
                 halfToFloat, floatToHalf);
      return kp::kStatusSuccess;
    case kp::DataType::kInt8:
      poolOnHost(
          job, static_cast<const int8_t*>(inputs[0]), static_cast<int8_t*>(outputs[0]),
          [](int8_t v) { return static_cast<float>(v); },
          [&job](float v) { return requantize(v, job.inScale, job.outScale); });
      return kp::kStatusSuccess;
    default:
      return fail(kp::kStatusUnsupported, "QuantizedPool runs float32, float16 and int8 only");
  }
}

int32_t QuantizedPoolPlugin::enqueue(const kp::TensorDesc*, const kp::TensorDesc*,
                                     const void* const* inputs, void* const* outputs, void*,
                                     void* cudaStream) noexcept {
#ifdef KILN_EXAMPLES_HAVE_CUDA
  const char* error = nullptr;
  const int32_t code =
      quantizedPoolOnStream(m_job, m_type, inputs[0], outputs[0], cudaStream, &error);
  return code == kp::kStatusSuccess ? code : fail(code, error);
#else
  (void)inputs, (void)outputs, (void)cudaStream;
  return failWithoutCuda();
#endif
}

QuantizedPoolCreator::QuantizedPoolCreator() : CreatorBase(kQuantizedPoolIdentity) {
  m_fields[0] = {"kernel_shape", nullptr, kp::FieldType::kInt64, 2, {}, {}};
  m_fields[1] = {"strides", nullptr, kp::FieldType::kInt64, 2, {}, {}};
  m_fields[2] = {"mode", nullptr, kp::FieldType::kString, -1, {}, {}};
}

kp::IPlugin* QuantizedPoolCreator::createPlugin(const char*, const kp::FieldCollection* fields,
                                                kp::Phase) noexcept {
  kp::IPlugin* plugin = nullptr;
  kp::guard(
      [&] {
        plugin = new QuantizedPoolPlugin(parseSettings(fields));
        return kp::kStatusSuccess;
      },
      [this](const char* message) { fail(message); });
  return plugin;
}

}  // namespace kiln_examples
