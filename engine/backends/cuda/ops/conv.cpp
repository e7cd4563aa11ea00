// Conv and ConvTranspose through cuDNN 9's backend (graph) API (cudnn_conv.h). Each
// layer builds a one-operation graph (convolution forward, or backward-data for
// ConvTranspose) for its exact shapes, asks the heuristics for engine configurations,
// drops those that break the precision contract (TF32 / down-converted inputs when
// TF32 is off), times the first few that finalize, and keeps the fastest plan in the
// layer state; the winner is the layer's choice (layer_choice.h), which an engine made
// from the plan builds again without timing. Bias is added after the convolution by FusedConv's
// vectorized epilogue pass (conv_epilogue.h; the fuse_conv_bias_activation pass moves bias and
// activation into FusedConv itself where it can). 1-D
// convolutions run as 2-D with a unit height.
// A grouped forward convolution of float16 / bfloat16 tensors also races cuDNN's float32
// engines on float32 copies of X and W, its Y cast back (choice form "cudnn_float32"):
// cuDNN's 16-bit grouped engines can run far below the float32 ones (wav2vec2's positional
// convolution, 16 groups of 48 channels and 128 taps: 3.2 ms against 0.6 ms on an H200),
// and one such layer would otherwise make the builder keep the whole engine float32. The
// float32 plans may use TF32: a 16-bit input's mantissa fits TF32's, so the products are
// exact and only the sums' rounding differs, as between any two engines.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/conv_epilogue.h"
#include "backends/cuda/ops/cudnn_conv.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/elementwise_nary_cast_impl.h"

namespace kiln::cuda {
namespace {

constexpr const char* kFloat32Form = "cudnn_float32";

struct ConvState {
  ConvGeometry geometry;
  std::shared_ptr<CudnnPlan> plan;
  bool float32Compute = false;  // plan is of float32 tensors: X and W cast in, Y cast out
};

// Whether `g` also races cuDNN's float32 engines (see the file comment).
bool offersFloat32Compute(const ConvGeometry& g) {
  if (g.transpose || (g.type != DataType::kFloat16 && g.type != DataType::kBFloat16)) return false;
  return g.x.size() >= 3 && g.w.size() >= 2 && g.w[1] > 0 && g.x[1] / g.w[1] > 1;  // grouped
}

ConvGeometry asFloat32(ConvGeometry g) {
  g.type = DataType::kFloat32;
  g.tf32 = true;
  return g;
}

// Float32 copies of X and W and room for Y in the kernel's workspace, X and W cast in.
struct Float32Operands {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

Status castOnDevice(GpuKernelContext& ctx, const void* src, DataType from, void* dst, DataType to,
                    int64_t n) {
  ew::CastLaunch cast;
  cast.src = src;
  cast.from = from;
  cast.dst = dst;
  cast.to = to;
  cast.n = n;
  return launchCast(cast, ctx.stream());
}

Result<Float32Operands> float32Operands(GpuKernelContext& ctx, const ConvGeometry& g, const void* x,
                                        const void* w) {
  const int64_t nx = shapeNumel(g.x), nw = shapeNumel(g.w), ny = shapeNumel(g.y);
  auto aligned = [](int64_t n) { return (n * 4 + 255) / 256 * 256; };
  KILN_ASSIGN_OR_RETURN(
      void* base, ctx.workspace(static_cast<size_t>(aligned(nx) + aligned(nw) + aligned(ny))));
  Float32Operands f;
  f.x = base;
  f.w = static_cast<char*>(base) + aligned(nx);
  f.y = static_cast<char*>(f.w) + aligned(nw);
  KILN_RETURN_IF_ERROR(castOnDevice(ctx, x, g.type, f.x, DataType::kFloat32, nx));
  KILN_RETURN_IF_ERROR(castOnDevice(ctx, w, g.type, f.w, DataType::kFloat32, nw));
  return f;
}

// The plan `planned` (a plan's recorded choice) names for `g`; kUnsupported with the
// reason when there is none or it does not apply here. Sets `float32Compute` for the
// float32 form.
Result<std::shared_ptr<CudnnPlan>> plannedConvPlan(const GpuKernelContext& ctx,
                                                   cudnnHandle_t handle, const ConvGeometry& g,
                                                   const std::string& planned,
                                                   bool* float32Compute) {
  if (planned.empty()) return unsupported("no recorded choice");
  LayerChoice c;
  if (!parseLayerChoice(planned, &c) || (c.form != "cudnn" && c.form != kFloat32Form) ||
      !c.hasEngine || c.paddedChannels > 0 || c.groups > 0)
    return unsupported("not a convolution's cuDNN engine");
  *float32Compute = c.form == kFloat32Form;
  if (*float32Compute && !offersFloat32Compute(g))
    return unsupported("float32 compute is for grouped 16-bit convolutions");
  CudnnDescriptor graph;
  KILN_RETURN_IF_ERROR(buildConvGraph(handle, *float32Compute ? asFloat32(g) : g, &graph));
  return planOfRecordedChoice(cudnnPlanStoreOf(ctx), handle, graph.get(), "", c.engine,
                              ctx.options().workspaceLimitBytes, ctx.node().displayName());
}

float fastestRan(const ChosenConvPlan& chosen) {
  float best = 0;
  for (const auto& [engine, ms] : chosen.ran)
    if (ms > 0 && (best == 0 || ms < best)) best = ms;
  return best;
}

Status runConvolution(GpuKernelContext& ctx, ConvGeometry g, void* x, const void* w, void* y) {
  g = promoteTo2d(std::move(g));
  auto handle = ctx.libraries().cudnn(ctx.stream());
  if (!handle.isOk()) return handle.status();
  auto& state = ctx.layerState();
  auto conv = std::static_pointer_cast<ConvState>(state);
  if (!conv || !(conv->geometry == g)) {
    // The plan's recorded engine (layer_choice.h: "cudnn engine=..."), else the heuristics'
    // candidates timed.
    const std::string planned = recordsConvChoice(ctx, g) ? ctx.plannedChoice() : "";
    bool float32Compute = false;
    Result<std::shared_ptr<CudnnPlan>> replayed =
        plannedConvPlan(ctx, handle.value(), g, planned, &float32Compute);
    ChosenConvPlan chosen, chosen32;
    if (replayed.isOk()) {
      chosen.plan = replayed.value();
      ctx.setImplementation((float32Compute ? "cuDNN float32 engine on 16-bit X, W and Y (cast "
                                              "in and out): "
                                            : "") +
                            chosen.plan->description + " (the plan's choice: " + planned + ")");
    } else {
      float32Compute = false;
      KILN_RETURN_IF_ERROR(chooseConvPlan(ctx, handle.value(), g, x, w, y, &chosen));
      std::string summary = chosen.summary;
      // The float32 race times the engines alone (the builder's timing of each offered
      // choice includes the casts); without room for the copies the 16-bit plan stands.
      Result<Float32Operands> f = offersFloat32Compute(g)
                                      ? float32Operands(ctx, g, x, w)
                                      : Result<Float32Operands>(unsupported("not grouped 16-bit"));
      if (f.isOk()) {
        if (chooseConvPlan(ctx, handle.value(), asFloat32(g), f->x, f->w, f->y, &chosen32).isOk()) {
          const float ms16 = fastestRan(chosen), ms32 = fastestRan(chosen32);
          float32Compute = ms32 > 0 && ms16 > 0 && ms32 < ms16;
          summary =
              float32Compute
                  ? "cuDNN float32 engine on 16-bit X, W and Y (cast in and "
                    "out), faster than the 16-bit engines (" +
                        chosen.summary + "): " + chosen32.summary
                  : chosen.summary + "; float32 engines on cast copies slower: " + chosen32.summary;
        }
      }
      ctx.setImplementation(
          summary + (planned.empty() ? ""
                                     : "; the plan's choice '" + planned +
                                           "' does not apply here: " + replayed.status().message() +
                                           ": timed again"));
      if (float32Compute) chosen.plan = chosen32.plan;
    }
    if (recordsConvChoice(ctx, g)) {
      LayerChoice choice;
      choice.form = float32Compute ? kFloat32Form : "cudnn";
      choice.hasEngine = true;
      choice.engine = chosen.plan->choice;
      ctx.setChoice(encodeLayerChoice(choice));
      std::vector<TimedChoice> offers;  // every engine the race ran, for a builder to time
      for (const ChosenConvPlan* race : {&chosen, &chosen32}) {
        choice.form = race == &chosen ? "cudnn" : kFloat32Form;
        for (const auto& [engine, ms] : race->ran) {
          choice.engine = engine;
          offers.push_back({encodeLayerChoice(choice), ms});
        }
      }
      ctx.offerChoices(choicesWorthTiming(offers));
    }
    conv = std::make_shared<ConvState>(ConvState{g, chosen.plan, float32Compute});
    state = conv;
  }
  KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, conv->plan->workspace));
  if (!conv->float32Compute)
    return executeCudnnPlan(handle.value(), *conv->plan,
                            {{kConvUidX, x}, {kConvUidW, const_cast<void*>(w)}, {kConvUidY, y}},
                            workspace);
  KILN_ASSIGN_OR_RETURN(Float32Operands f, float32Operands(ctx, g, x, w));
  KILN_RETURN_IF_ERROR(executeCudnnPlan(handle.value(), *conv->plan,
                                        {{kConvUidX, f.x}, {kConvUidW, f.w}, {kConvUidY, f.y}},
                                        workspace));
  return castOnDevice(ctx, f.y, DataType::kFloat32, y, g.type, shapeNumel(g.y));
}

Status addBias(GpuKernelContext& ctx, const DeviceTensor& out) {
  if (!ctx.hasInput(2)) return Status::ok();
  const DeviceTensor& bias = ctx.input(2);
  int64_t channels = out.shape[1];
  if (bias.numel() != channels)
    return ctx.error("bias has " + std::to_string(bias.numel()) + " values for " +
                     std::to_string(channels) + " channels");
  int64_t inner = 1;
  for (int d = 2; d < out.rank(); ++d) inner *= out.shape[d];
  if (bias.type != out.type) return ctx.error("bias must have the type of X");
  return applyConvEpilogue(out.data, out.type, bias.data, nullptr, out.shape[0], channels, inner,
                           ConvEpilogue{}, ctx.stream());
}

Status convKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& w = ctx.input(1);
  ConvGeometry g;
  KILN_RETURN_IF_ERROR(forwardConvGeometry(ctx, x, w, &g));
  auto out = ctx.allocateOutput(0, x.type, g.y);
  if (!out.isOk()) return out.status();
  if (out.value().numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(runConvolution(ctx, g, x.data, w.data, out.value().data));
  return addBias(ctx, out.value());
}

Status convTransposeKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(0);
  const DeviceTensor& w = ctx.input(1);
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return ctx.unsupported("ConvTranspose of rank " + std::to_string(x.rank()));
  }
  const size_t spatial = static_cast<size_t>(x.rank() - 2);
  ConvAttributes a = readConvAttributes(ctx.node(), spatial, w.shape);
  if (a.group != 1) return ctx.unsupported("grouped ConvTranspose");
  if (!a.outputShape.empty() || a.autoPad != "NOTSET") {
    return ctx.unsupported("ConvTranspose with output_shape or auto_pad");
  }
  if (x.shape[1] != w.shape[0]) return ctx.error("channels do not match");
  Shape outShape = {x.shape[0], w.shape[1]};
  ConvGeometry g;
  g.type = x.type;
  g.transpose = true;
  g.tf32 = x.type == DataType::kFloat32 && ctx.options().allowTf32;
  g.strides = a.strides;
  g.dilations = a.dilations;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t k = (a.kernel[d] - 1) * a.dilations[d] + 1;
    int64_t out = a.strides[d] * (x.shape[2 + d] - 1) + a.outputPadding[d] + k - a.pads[d] -
                  a.pads[d + spatial];
    if (out <= 0) return ctx.error("output would be empty");
    outShape.push_back(out);
    g.pre.push_back(a.pads[d]);
    // The forward convolution of the output must give back x's size: output padding
    // goes to the end padding (possibly negative, which cuDNN rejects -> host).
    g.post.push_back(a.pads[d + spatial] - a.outputPadding[d]);
    if (g.post.back() < 0) return ctx.unsupported("ConvTranspose output_padding beyond the pads");
  }
  g.x = outShape;  // dx: the image side
  g.w = w.shape;   // [C_in(=forward K), C_out, k...]
  g.y = x.shape;   // dy: the forward output side
  auto out = ctx.allocateOutput(0, x.type, outShape);
  if (!out.isOk()) return out.status();
  if (out.value().numel() == 0) return Status::ok();
  KILN_RETURN_IF_ERROR(runConvolution(ctx, g, out.value().data, w.data, x.data));
  return addBias(ctx, out.value());
}

std::string convSupport(const Node& node, const std::vector<DataType>& types) {
  for (size_t i = 0; i < std::min<size_t>(types.size(), 3); ++i) {
    DataType t = types[i];
    if (t != DataType::kUndefined && t != DataType::kFloat32 && t != DataType::kFloat16 &&
        t != DataType::kBFloat16)
      return std::string("no cuDNN convolution for ") + dataTypeName(t);
  }
  return "";
}

}  // namespace

void registerConvGpuKernels(GpuKernelRegistry& registry) {
  registry.add("Conv", 1, 1000, convKernel, convSupport);
  registry.add("ConvTranspose", 1, 1000, convTransposeKernel, convSupport);
}

}  // namespace kiln::cuda
