// ai.kiln PointwiseChain on CUDA (program: ir/pointwise_program.h; reference:
// cpu/ops/pointwise_chain.cpp). Two candidates, timed at the first run of a shape;
// the layer state keeps the faster and the implementation text names both times:
//   generated: one kernel for the whole program, CUDA C from pointwise_codegen.cpp
//     compiled by NVRTC for this device's exact sm_XY (nvrtc_module.cpp), one thread
//     per element, or per 16-byte pack when the pointers are aligned and every input is
//     full-shape or one element, or broadcasts so that packs stay whole (a channel
//     vector whose length the pack divides); broadcast inputs through precomputed
//     strides over the collapsed dims.
//   unfused: each step by its own op's CUDA kernel (pointwise_unfused.cpp).
// The node attribute `path` ("auto", "generated", "unfused") restricts the candidates,
// for tests and tactic pinning. The winner is the layer's choice, which an engine made
// from the plan takes back without timing.
//
// Cubins in the plan: at the end of a CUDA build, generatedKernelsForLayer() (below)
// compiles each PointwiseChain layer's source for the first profile's opt shapes and
// the plan's precision, and the plan stores the cubins under
// generatedKernelKey(sm_XY, source). The source is regenerated at load (the same
// program, storage types and input access give the same text, pointwise_access.h),
// and a runtime that preloaded the plan's cubins finds one under the same key, so it
// loads it instead of compiling: the text says "cubin ... B from plan". Another shape
// (or a plan without the cubin) compiles once per process for each source, and the
// text says "compiled in N ms". A compile error is a one-line error naming the layer
// with NVRTC's first log line.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_conv.h"  // timeOnStream
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/nvrtc_module.h"
#include "backends/cuda/ops/pointwise_access.h"
#include "backends/cuda/ops/pointwise_codegen.h"
#include "backends/cuda/ops/pointwise_unfused.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

constexpr int kBlock = 256;

struct PointwiseChainState {
  std::string signature;  // input types and shapes the state was made for
  PointwiseKernelSpec spec;
  PointwiseArgs args{};  // dims and strides; pointers are set per run
  std::shared_ptr<const NvrtcLibrary> library;
  std::unique_ptr<UnfusedPointwiseChain> unfused;
  bool useUnfused = false;
};

std::string signatureOf(const GpuKernelContext& ctx) {
  std::string s;
  for (size_t k = 0; k < ctx.inputCount(); ++k)
    s += std::string(dataTypeName(ctx.input(k).type)) + shapeToString(ctx.input(k).shape) + ";";
  return s;
}

bool aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

Status launchGenerated(GpuKernelContext& ctx, const PointwiseChainState& st,
                       const DeviceTensor& y) {
  PointwiseArgs args = st.args;
  args.n = y.numel();
  args.out = y.data;
  const int width = st.spec.vectorWidth();
  bool packs = width > 0 && args.n % width == 0 && aligned(y.data, width * dataTypeSize(y.type));
  for (size_t k = 0; k < ctx.inputCount(); ++k) {
    args.in[k] = ctx.input(k).data;
    const bool packed = st.spec.access[k] == InputAccess::kFull ||
                        (st.spec.access[k] == InputAccess::kStrided && st.spec.innerContiguous[k]);
    if (packed) packs = packs && aligned(args.in[k], width * dataTypeSize(st.spec.inputTypes[k]));
  }
  const cudaKernel_t kernel =
      st.library->kernel(packs ? kPointwiseVecKernelName : kPointwiseKernelName);
  const int64_t work = packs ? args.n / width : args.n;
  const int64_t blocks = std::min<int64_t>((work + kBlock - 1) / kBlock, int64_t(1) << 20);
  void* params[] = {&args};
  KILN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                   dim3(static_cast<unsigned>(blocks)), dim3(kBlock), params, 0,
                                   ctx.stream()));
  return Status::ok();
}

Status runChosen(GpuKernelContext& ctx, const PointwiseChainState& st, const DeviceTensor& y) {
  return st.useUnfused ? st.unfused->run(ctx, y) : launchGenerated(ctx, st, y);
}

// "kiln nvrtc pointwise sm_90 (4 ops, packs of 4 where aligned, cubin 5120 B from
// plan)", or "... compiled in 85.2 ms)" when NVRTC made it in this process.
void summarizeGenerated(const PointwiseChainState& st, size_t ops, std::ostringstream& summary) {
  const NvrtcLibrary& library = *st.library;
  summary << "kiln nvrtc pointwise " << library.architecture() << " (" << ops << " ops, "
          << (st.spec.vectorWidth()
                  ? "packs of " + std::to_string(st.spec.vectorWidth()) + " where aligned"
                  : std::string("strided"))
          << ", cubin " << library.cubinBytes() << " B ";
  if (library.fromPlan()) {
    summary << "from plan)";
    return;
  }
  char ms[32];
  std::snprintf(ms, sizeof(ms), "%.1f", library.compileMilliseconds());
  summary << "compiled in " << ms << " ms)";
  if (!library.note().empty()) summary << "; " << library.note();
}

// Compiles the generated kernel (unless path is "unfused"), plans the unfused chain
// (unless path is "generated"), times both when both exist, keeps the faster. On path
// "auto" the plan's recorded choice ("generated" or "unfused": GpuKernelContext::
// plannedChoice) stands for the path and nothing is timed; the winner is the layer's
// choice (setChoice).
Status choose(GpuKernelContext& ctx, const PointwiseProgram& storage, std::string path,
              const DeviceTensor& y, PointwiseChainState* st) {
  std::ostringstream summary;
  std::string planNote;
  if (path == "auto") {
    const std::string planned = ctx.plannedChoice();
    if (planned == "generated" || planned == "unfused") {
      path = planned;
      planNote = " (the plan's choice: " + planned + ")";
    } else if (!planned.empty()) {
      planNote = "; the plan's choice '" + planned + "' does not apply here: timed again";
    }
  }
  const bool recordChoice = path == "auto" || !planNote.empty();
  if (path != "unfused") {
    auto compiled = compileCudaSource(nvrtcStoreOf(ctx), generatePointwiseSource(storage, st->spec),
                                      pointwiseKernelNames(st->spec), "the generated kernel");
    if (!compiled.isOk())
      return Status(compiled.status().code(),
                    ctx.node().describe() + ": " + compiled.status().message());
    st->library = compiled.value();
    summarizeGenerated(*st, storage.steps.size(), summary);
  }
  std::string unfusedWhy;
  if (path != "generated") {
    auto unfused = UnfusedPointwiseChain::create(ctx, storage);
    if (unfused.isOk())
      st->unfused = std::move(unfused.value());
    else if (path == "unfused")
      return unfused.status();
    else
      unfusedWhy = unfused.status().message();
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KILN_CUDA_CHECK(cudaStreamIsCapturing(ctx.stream(), &capture));
  st->useUnfused = !st->library;
  if (st->library && st->unfused && capture == cudaStreamCaptureStatusNone) {
    st->useUnfused = false;
    KILN_ASSIGN_OR_RETURN(float generatedMs,
                          timeOnStream(ctx.stream(), [&] { return runChosen(ctx, *st, y); }));
    st->useUnfused = true;
    KILN_ASSIGN_OR_RETURN(float unfusedMs,
                          timeOnStream(ctx.stream(), [&] { return runChosen(ctx, *st, y); }));
    st->useUnfused = unfusedMs < generatedMs;
    summary << "; timed {generated=" << generatedMs << "ms, unfused " << st->unfused->kernelCount()
            << " kernels=" << unfusedMs << "ms}";
    if (path == "auto")  // for a builder to time
      ctx.offerChoices(choicesWorthTiming({{"generated", generatedMs}, {"unfused", unfusedMs}}));
  }
  if (recordChoice) ctx.setChoice(st->useUnfused ? "unfused" : "generated");
  if (st->useUnfused) {
    std::ostringstream text;
    text << "unfused: " << st->unfused->kernelCount() << " CUDA kernels";
    if (summary.tellp() > 0) text << "; " << summary.str();
    ctx.setImplementation(text.str() + planNote);
    return Status::ok();
  }
  if (!unfusedWhy.empty()) summary << "; unfused: " << unfusedWhy;
  ctx.setImplementation(summary.str() + planNote);
  return Status::ok();
}

Status checkInputs(const GpuKernelContext& ctx, const PointwiseProgram& program) {
  if (ctx.inputCount() != static_cast<size_t>(program.inputCount))
    return ctx.error("has " + std::to_string(ctx.inputCount()) + " inputs, its program reads " +
                     std::to_string(program.inputCount));
  if (program.inputCount > kPointwiseMaxInputs)
    return ctx.unsupported("more than " + std::to_string(kPointwiseMaxInputs) + " inputs");
  for (size_t k = 0; k < ctx.inputCount(); ++k) {
    if (!ctx.hasInput(k)) return ctx.error("input " + std::to_string(k) + " is missing");
    if (!isPointwiseType(ctx.input(k).type))
      return ctx.unsupported(std::string("input ") + std::to_string(k) + " is " +
                             dataTypeName(ctx.input(k).type));
  }
  return Status::ok();
}

Status pointwiseChainKernel(GpuKernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(PointwiseProgram program, readPointwiseProgram(ctx.node()));
  KILN_RETURN_IF_ERROR(checkInputs(ctx, program));
  const std::string path = ctx.node().attrString("path", "auto");
  if (path != "auto" && path != "generated" && path != "unfused")
    return ctx.error("unknown path '" + path + "' (auto, generated, unfused)");
  std::vector<DataType> types;
  std::vector<Shape> shapes;
  for (size_t k = 0; k < ctx.inputCount(); ++k) {
    types.push_back(ctx.input(k).type);
    shapes.push_back(ctx.input(k).shape);
  }
  Result<Shape> shape = pointwiseOutputShape(shapes);
  if (!shape.isOk()) return ctx.error(shape.status().message());
  if (static_cast<int>(shape->size()) > kPointwiseMaxRank)
    return ctx.unsupported("rank " + std::to_string(shape->size()) + " (at most " +
                           std::to_string(kPointwiseMaxRank) + ")");
  // The types the device holds (float32 may be 16-bit).
  const PointwiseProgram storage = pointwiseStorageProgram(program, ctx.floatType());
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, storage.outputType(), *shape));
  if (y.numel() == 0) return Status::ok();
  auto& slot = ctx.layerState();
  auto state = std::static_pointer_cast<PointwiseChainState>(slot);
  const std::string signature = signatureOf(ctx);
  if (!state || state->signature != signature) {
    state = std::make_shared<PointwiseChainState>();
    state->signature = signature;
    state->spec.outputType = y.type;
    planPointwiseAccess(types, shapes, *shape, &state->spec, &state->args);
    KILN_RETURN_IF_ERROR(choose(ctx, storage, path, y, state.get()));
    slot = state;
  }
  return runChosen(ctx, *state, y);
}

// True when the runtime would compile a generated kernel for these input storage
// types: what checkInputs() and the registry's supportsFloatTypes() accept.
bool generatesKernel(const Node& node, const PointwiseProgram& program,
                     const std::vector<DataType>& types) {
  const std::string path = node.attrString("path", "auto");
  if (path != "auto" && path != "generated") return false;
  if (types.size() != static_cast<size_t>(program.inputCount) ||
      program.inputCount > kPointwiseMaxInputs)
    return false;
  for (DataType t : types)
    if (t == DataType::kUndefined || !isPointwiseType(t)) return false;
  return supportsFloatTypes(node, types).empty();
}

}  // namespace

void registerPointwiseChainGpuKernel(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = kKilnDomain;
  entry.opType = kPointwiseChainOp;
  entry.fn = pointwiseChainKernel;
  entry.supports = &supportsFloatTypes;
  registry.add(entry);
}

Result<std::vector<GeneratedKernelBinary>> generatedKernelsForLayer(
    CompiledCode& code, const Node& node, const std::vector<DataType>& inputTypes,
    const std::vector<Shape>& inputShapes, DataType floatType, int device) {
  std::vector<GeneratedKernelBinary> none;
  if (node.domain != kKilnDomain || node.opType != kPointwiseChainOp) return none;
  KILN_ASSIGN_OR_RETURN(PointwiseProgram program, readPointwiseProgram(node));
  std::vector<DataType> types;  // storage types, as pointwiseChainKernel() sees them
  for (DataType t : inputTypes) types.push_back(t == DataType::kFloat32 ? floatType : t);
  if (!generatesKernel(node, program, types) || inputShapes.size() != types.size()) return none;
  Result<Shape> shape = pointwiseOutputShape(inputShapes);
  if (!shape.isOk() || static_cast<int>(shape->size()) > kPointwiseMaxRank ||
      shapeNumel(*shape) == 0)
    return none;  // the runtime reports or skips these itself
  const PointwiseProgram storage = pointwiseStorageProgram(program, floatType);
  PointwiseKernelSpec spec;
  spec.outputType = storage.outputType();
  PointwiseArgs args{};
  planPointwiseAccess(types, inputShapes, *shape, &spec, &args);
  KILN_CUDA_CHECK(cudaSetDevice(device));
  auto library = compileCudaSource(code.stores().nvrtc, generatePointwiseSource(storage, spec),
                                   pointwiseKernelNames(spec), "the generated kernel");
  if (!library.isOk()) return library.status().withContext(node.describe());
  GeneratedKernelBinary binary;
  if (!findGeneratedKernel(code.stores().nvrtc, library.value()->key(), &binary))
    return internalError(node.describe() + ": the generated kernel's cubin was not remembered");
  binary.layers = {node.displayName()};
  return std::vector<GeneratedKernelBinary>{std::move(binary)};
}

}  // namespace kiln::cuda
