// ai.kiln PointwiseChain on CUDA (program: ir/pointwise_program.h; reference:
// cpu/ops/pointwise_chain.cpp). Two candidates, timed at the first run of a shape;
// the layer state keeps the faster and the implementation text names both times:
//   generated: one kernel for the whole program, CUDA C from pointwise_codegen.cpp
//     compiled by NVRTC for this device's exact sm_XY (nvrtc_module.cpp), one thread
//     per element, or per 16-byte pack when every input is full-shape or one element
//     and the pointers are aligned; broadcast inputs through precomputed strides.
//   unfused: each step by its own op's CUDA kernel (pointwise_unfused.cpp).
// The node attribute `path` ("auto", "generated", "unfused") restricts the candidates,
// for tests and tactic pinning. The plan stores the program, not the cubin: the
// source is regenerated at load, deterministically (same program, storage types and
// input access give the same text), and compiled once per process for each source.
// A compile error is a one-line error naming the layer with NVRTC's first log line.
#include <algorithm>
#include <sstream>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_conv.h"  // timeOnStream
#include "backends/cuda/ops/nvrtc_module.h"
#include "backends/cuda/ops/pointwise_codegen.h"
#include "backends/cuda/ops/pointwise_unfused.h"
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

// The inputs' broadcast shape, or an error naming the input that does not broadcast.
Status outputShape(const GpuKernelContext& ctx, Shape* out) {
  for (size_t k = 0; k < ctx.inputCount(); ++k) {
    const Shape& in = ctx.input(k).shape;
    const size_t rank = std::max(out->size(), in.size());
    Shape next(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t a = i < rank - out->size() ? 1 : (*out)[i - (rank - out->size())];
      const int64_t b = i < rank - in.size() ? 1 : in[i - (rank - in.size())];
      if (a != b && a != 1 && b != 1)
        return ctx.error("input " + std::to_string(k) + " " + shapeToString(in) +
                         " does not broadcast to " + shapeToString(*out));
      next[i] = a == 1 ? b : a;
    }
    *out = std::move(next);
  }
  return Status::ok();
}

// How each input is read, and the dims and strides the strided ones need.
void planAccess(const GpuKernelContext& ctx, const Shape& out, PointwiseChainState* st) {
  const int64_t n = shapeNumel(out);
  st->spec.rank = static_cast<int>(out.size());
  st->spec.index32 = n <= int64_t(0xffffffff);
  for (size_t d = 0; d < out.size(); ++d) st->args.dims[d] = out[d];
  for (size_t k = 0; k < ctx.inputCount(); ++k) {
    const DeviceTensor& in = ctx.input(k);
    st->spec.inputTypes.push_back(in.type);
    const InputAccess access = in.numel() == n   ? InputAccess::kFull
                               : in.numel() == 1 ? InputAccess::kScalar
                                                 : InputAccess::kStrided;
    st->spec.access.push_back(access);
    if (access != InputAccess::kStrided) continue;
    int64_t stride = 1;  // row-major strides of `in` right-aligned to `out`; 0 where broadcast
    for (int d = static_cast<int>(out.size()) - 1, i = in.rank() - 1; d >= 0; --d, --i) {
      const int64_t dim = i >= 0 ? in.shape[i] : 1;
      st->args.strides[k][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
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
    if (st.spec.access[k] == InputAccess::kFull)
      packs = packs && aligned(args.in[k], width * dataTypeSize(st.spec.inputTypes[k]));
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

// Compiles the generated kernel (unless path is "unfused"), plans the unfused chain
// (unless path is "generated"), times both when both exist, keeps the faster.
Status choose(GpuKernelContext& ctx, const PointwiseProgram& storage, const std::string& path,
              const DeviceTensor& y, PointwiseChainState* st) {
  std::ostringstream summary;
  if (path != "unfused") {
    const std::string source = generatePointwiseSource(storage, st->spec);
    std::vector<std::string> kernels = {kPointwiseKernelName};
    if (st->spec.vectorWidth() > 0) kernels.push_back(kPointwiseVecKernelName);
    auto compiled = compileCudaSource(source, kernels, "the generated kernel");
    if (!compiled.isOk())
      return Status(compiled.status().code(),
                    ctx.node().describe() + ": " + compiled.status().message());
    st->library = compiled.value();
    summary << "kiln nvrtc pointwise " << st->library->architecture() << " ("
            << storage.steps.size() << " ops, "
            << (st->spec.vectorWidth()
                    ? "packs of " + std::to_string(st->spec.vectorWidth()) + " where aligned"
                    : std::string("strided"))
            << ", cubin " << st->library->cubinBytes() << " B)";
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
  }
  if (st->useUnfused) {
    std::ostringstream text;
    text << "unfused: " << st->unfused->kernelCount() << " CUDA kernels";
    if (summary.tellp() > 0) text << "; " << summary.str();
    ctx.setImplementation(text.str());
    return Status::ok();
  }
  if (!unfusedWhy.empty()) summary << "; unfused: " << unfusedWhy;
  ctx.setImplementation(summary.str());
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
  Shape shape;
  KILN_RETURN_IF_ERROR(outputShape(ctx, &shape));
  if (static_cast<int>(shape.size()) > kPointwiseMaxRank)
    return ctx.unsupported("rank " + std::to_string(shape.size()) + " (at most " +
                           std::to_string(kPointwiseMaxRank) + ")");
  PointwiseProgram storage = program;  // the types the device holds (float32 may be 16-bit)
  for (PointwiseStep& step : storage.steps) step.type = ctx.storageType(step.type);
  KILN_ASSIGN_OR_RETURN(DeviceTensor y, ctx.allocateOutput(0, storage.outputType(), shape));
  if (y.numel() == 0) return Status::ok();
  auto& slot = ctx.layerState();
  auto state = std::static_pointer_cast<PointwiseChainState>(slot);
  const std::string signature = signatureOf(ctx);
  if (!state || state->signature != signature) {
    state = std::make_shared<PointwiseChainState>();
    state->signature = signature;
    state->spec.outputType = y.type;
    planAccess(ctx, shape, state.get());
    KILN_RETURN_IF_ERROR(choose(ctx, storage, path, y, state.get()));
    slot = state;
  }
  return runChosen(ctx, *state, y);
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

}  // namespace kiln::cuda
