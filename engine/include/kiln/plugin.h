// The Kiln plugin ABI: how a custom layer (a user's CPU and/or CUDA kernel for an op
// Kiln lacks) plugs into the importer, the builder and both runtimes.
//
// Stability rules (a library built against this header keeps loading):
//  - only pure virtual interfaces, plain structs and fixed-width enums cross the
//    boundary: no STL type, no exception, no kiln::Status;
//  - every virtual is noexcept; an exception that escapes one ends the process, so
//    plugin code wraps its bodies in kiln::plugin::guard() (below), which turns an
//    exception into kStatusException and a message the host reports;
//  - interfaces only grow at the end, and kPluginApiVersion changes when they do.
//
// A plugin object answers three capabilities:
//  - core (IPlugin): identity, output count, types and symbolic shapes; used while
//    importing, building and running;
//  - build (IPluginBuild): which type/format combinations it takes, configuration
//    with a profile's min/opt/max shapes, and the fields a plan keeps;
//  - runtime (IPluginRuntime): workspace, shape changes and execution on the CPU
//    (the reference backend, CI) and/or on a CUDA stream.
// Creators (IPluginCreator) make plugins from typed fields: the ONNX node's
// attributes when building, the serialized fields when a plan is loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>

namespace kiln::plugin {

// Version of the interfaces in this header. The host refuses a library built for
// another version, naming both.
constexpr int32_t kPluginApiVersion = 1;

// Return codes of plugin calls (0 is success; the message is getLastError()).
constexpr int32_t kStatusSuccess = 0;
constexpr int32_t kStatusInvalidArgument = 1;
constexpr int32_t kStatusUnsupported = 2;
constexpr int32_t kStatusException = 3;  // guard() caught an exception
constexpr int32_t kStatusInternal = 4;
constexpr int32_t kStatusCudaError = 5;

// Element types; values equal kiln::DataType (ONNX TensorProto codes).
enum class DataType : int32_t {
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kBFloat16 = 16,
};

// Memory layout of a tensor. Dimensions are always logical (N, C, H, W); the
// format says how elements are laid out. kChannelsLast applies to 4-D tensors.
enum class TensorFormat : int32_t {
  kLinear = 0,        // row-major, packed
  kChannelsLast = 1,  // N, H, W, C order in memory (NHWC)
};

constexpr int32_t kMaxDims = 8;

struct Dims {
  int32_t nbDims = 0;
  int64_t d[kMaxDims] = {};
};

// A tensor as one execution sees it.
struct TensorDesc {
  Dims dims;
  DataType type = DataType::kFloat32;
  TensorFormat format = TensorFormat::kLinear;
  // INT8 tensors: real value = stored value * scale (symmetric, zero point 0), from
  // the QuantizeLinear that produces the input or the DequantizeLinear that reads
  // the output. 0 when the tensor is not INT8 or no scale is known.
  float scale = 0.f;
};

// A tensor over an optimization profile: `desc.dims` holds -1 where the dimension
// varies; min/opt/max are the profile's bounds (all equal for a fixed shape).
struct DynamicTensorDesc {
  TensorDesc desc;
  Dims min;
  Dims opt;
  Dims max;
};

// Symbolic dimensions: output shapes are expressions of input dimensions, built
// with the IExprBuilder the host passes to getOutputShapes(). The host owns every
// expression; they stay valid until that call returns.
class IDimExpr {
 public:
  virtual bool isConstant() const noexcept = 0;
  virtual int64_t getConstantValue() const noexcept = 0;  // meaningful when isConstant()

 protected:
  ~IDimExpr() = default;
};

enum class DimOperation : int32_t {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kSub = 4,
  kFloorDiv = 5,
  kCeilDiv = 6,
};

class IExprBuilder {
 public:
  // Never returns nullptr. A division by a constant zero yields 0 and fails the
  // shape computation with a message naming the plugin.
  virtual const IDimExpr* constant(int64_t value) noexcept = 0;
  virtual const IDimExpr* operation(DimOperation op, const IDimExpr& a,
                                    const IDimExpr& b) noexcept = 0;

 protected:
  ~IExprBuilder() = default;
};

struct DimsExprs {
  int32_t nbDims = 0;
  const IDimExpr* d[kMaxDims] = {};
};

// Typed fields: a creator's parameters. From ONNX, an int/ints attribute is kInt64,
// float/floats kFloat32, string kString, tensor kWeights.
enum class FieldType : int32_t {
  kInt64 = 0,    // data: int64_t[length]
  kFloat32 = 1,  // data: float[length]
  kString = 2,   // data: char[length], not NUL-terminated
  kWeights = 3,  // data: weightType[length], row-major with weightDims
};

struct Field {
  const char* name = nullptr;
  const void* data = nullptr;  // nullptr in getFieldNames() declarations
  FieldType type = FieldType::kInt64;
  // Elements (bytes for kString). In a declaration: the exact length required, or
  // -1 for any length.
  int64_t length = -1;
  DataType weightType = DataType::kFloat32;  // kWeights only
  Dims weightDims;                           // kWeights only
};

struct FieldCollection {
  int32_t nbFields = 0;
  const Field* fields = nullptr;
};

// Which fields createPlugin() receives: the ONNX attributes (build) or what
// getFieldsToSerialize() returned when the plan was built (runtime).
enum class Phase : int32_t { kBuild = 0, kRuntime = 1 };

class IPluginBuild;
class IPluginRuntime;

// Core capability. Calls on one object never overlap; the host may clone() it to
// run several contexts at once.
class IPlugin {
 public:
  // The header version the plugin was compiled against (do not override).
  virtual int32_t getInterfaceVersion() const noexcept { return kPluginApiVersion; }
  virtual const char* getPluginName() const noexcept = 0;
  virtual const char* getPluginVersion() const noexcept = 0;
  virtual const char* getPluginNamespace() const noexcept = 0;

  virtual int32_t getNbOutputs() const noexcept = 0;
  // Output types for these input types (the candidate the builder asks about, or
  // what runs). Returns a kStatus code.
  virtual int32_t getOutputDataTypes(DataType* outputTypes, int32_t nbOutputs,
                                     const DataType* inputTypes,
                                     int32_t nbInputs) const noexcept = 0;
  // Output dimensions as expressions of the input dimensions. The host checks the
  // result (rank within kMaxDims, every expression set, never negative).
  virtual int32_t getOutputShapes(const DimsExprs* inputs, int32_t nbInputs, DimsExprs* outputs,
                                  int32_t nbOutputs, IExprBuilder& exprBuilder) noexcept = 0;

  // nullptr when the phase does not need it (build: required; runtime: optional).
  virtual IPluginBuild* getBuildCapability() noexcept = 0;
  // Required in both phases.
  virtual IPluginRuntime* getRuntimeCapability() noexcept = 0;

  // A copy with the same configuration; nullptr on failure.
  virtual IPlugin* clone() const noexcept = 0;
  // Why the last call on this object failed ("" when none did).
  virtual const char* getLastError() const noexcept = 0;
  // Frees the object with the library's own allocator.
  virtual void destroy() noexcept = 0;

 protected:
  virtual ~IPlugin() = default;
};

class IPluginBuild {
 public:
  // Whether position `pos` (inputs first, then outputs) may have the type and
  // format inOut[pos] gives, with positions below `pos` as inOut gives them. Look
  // at lower positions only: higher ones are not decided yet.
  virtual bool supportsFormatCombination(int32_t pos, const DynamicTensorDesc* inOut,
                                         int32_t nbInputs, int32_t nbOutputs) noexcept = 0;
  // The chosen types and formats with one profile's shape ranges; called once per
  // profile and before each timing. Returns a kStatus code.
  virtual int32_t configurePlugin(const DynamicTensorDesc* inputs, int32_t nbInputs,
                                  const DynamicTensorDesc* outputs, int32_t nbOutputs) noexcept = 0;
  // Only what the runtime needs; the plan stores these fields and hands them to
  // createPlugin(..., Phase::kRuntime). Valid until the next call on the object.
  virtual const FieldCollection* getFieldsToSerialize() noexcept = 0;

 protected:
  ~IPluginBuild() = default;
};

class IPluginRuntime {
 public:
  // Scratch bytes for shapes within these ranges (concrete shapes at run time,
  // where min == opt == max).
  virtual size_t getWorkspaceSize(const DynamicTensorDesc* inputs, int32_t nbInputs,
                                  const DynamicTensorDesc* outputs,
                                  int32_t nbOutputs) const noexcept = 0;
  // The shapes, types, formats and scales of the next executions.
  virtual int32_t onShapeChange(const TensorDesc* inputs, int32_t nbInputs,
                                const TensorDesc* outputs, int32_t nbOutputs) noexcept = 0;

  virtual bool hasCpuImplementation() const noexcept = 0;
  // Host pointers; runs to completion.
  virtual int32_t executeCpu(const TensorDesc* inputDesc, const TensorDesc* outputDesc,
                             const void* const* inputs, void* const* outputs,
                             void* workspace) noexcept = 0;

  virtual bool hasCudaImplementation() const noexcept = 0;
  // Device pointers; enqueues the work on `cudaStream` (a cudaStream_t) without
  // synchronizing.
  virtual int32_t enqueue(const TensorDesc* inputDesc, const TensorDesc* outputDesc,
                          const void* const* inputs, void* const* outputs, void* workspace,
                          void* cudaStream) noexcept = 0;

 protected:
  ~IPluginRuntime() = default;
};

// A factory of one plugin (name, version, namespace). Creators live as long as the
// library that registered them is loaded (the host never unloads one).
class IPluginCreator {
 public:
  virtual int32_t getInterfaceVersion() const noexcept { return kPluginApiVersion; }
  virtual const char* getPluginName() const noexcept = 0;
  virtual const char* getPluginVersion() const noexcept = 0;
  virtual const char* getPluginNamespace() const noexcept = 0;
  // The fields createPlugin() accepts (data nullptr, length -1 for any). The host
  // refuses an ONNX attribute that is not declared here or has another type.
  virtual const FieldCollection* getFieldNames() noexcept = 0;
  // A new plugin for layer `layerName`, or nullptr with getLastError() saying why.
  virtual IPlugin* createPlugin(const char* layerName, const FieldCollection* fields,
                                Phase phase) noexcept = 0;
  virtual const char* getLastError() const noexcept = 0;

 protected:
  ~IPluginCreator() = default;
};

// The host's side of registration, handed to a library's entry point.
class IPluginRegistrar {
 public:
  virtual int32_t getHostApiVersion() const noexcept = 0;
  // Registers `creator` under `pluginNamespace` (nullptr: the creator's own). False
  // when a creator of that name, version and namespace is already registered.
  virtual bool registerCreator(IPluginCreator& creator, const char* pluginNamespace) noexcept = 0;

 protected:
  ~IPluginRegistrar() = default;
};

// Runs `body` (returning a kStatus code) so that no exception leaves a noexcept
// plugin method: an exception becomes kStatusException and onError(message).
template <class Body, class OnError>
int32_t guard(Body&& body, OnError&& onError) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    try {
      onError(e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      onError("unknown exception");
    } catch (...) {
    }
  }
  return kStatusException;
}

// A creator object that lives for the whole process (for the entry point and the
// static registration macro).
template <class Creator>
Creator& staticCreator() {
  static Creator creator;
  return creator;
}

}  // namespace kiln::plugin

// The symbols a plugin library exports (the host looks them up by name).
#define KILN_PLUGIN_API_VERSION_SYMBOL "kilnPluginApiVersion"
#define KILN_PLUGIN_REGISTER_SYMBOL "kilnRegisterPlugins"

// Defines a shared library's entry points: the API version it was built for, and
// a registration function whose body registers creators with `registrar`:
//   KILN_PLUGIN_LIBRARY(registrar) {
//     return registrar->registerCreator(kiln::plugin::staticCreator<FooCreator>(), nullptr)
//                ? 0 : 1;
//   }
// A non-zero return refuses the library.
#define KILN_PLUGIN_LIBRARY(registrar)                                                        \
  extern "C" __attribute__((visibility("default"))) int32_t kilnPluginApiVersion() noexcept { \
    return ::kiln::plugin::kPluginApiVersion;                                                 \
  }                                                                                           \
  extern "C" __attribute__((visibility("default"))) int32_t kilnRegisterPlugins(              \
      ::kiln::plugin::IPluginRegistrar* registrar) noexcept

// Static registration, for creators compiled into a program that links libkiln
// (the library path needs KILN_PLUGIN_LIBRARY). Registers at start-up under the
// creator's own namespace. Use it in the program's own sources: an object file of a
// static library that nothing else references is dropped by the linker.
extern "C" int32_t kilnRegisterStaticPluginCreator(kiln::plugin::IPluginCreator* creator) noexcept;
#define KILN_PLUGIN_CONCAT_INNER(a, b) a##b
#define KILN_PLUGIN_CONCAT(a, b) KILN_PLUGIN_CONCAT_INNER(a, b)
#define KILN_REGISTER_PLUGIN_CREATOR(CreatorType)                              \
  static const int32_t KILN_PLUGIN_CONCAT(kilnPluginRegistration_, __LINE__) = \
      kilnRegisterStaticPluginCreator(&::kiln::plugin::staticCreator<CreatorType>())
