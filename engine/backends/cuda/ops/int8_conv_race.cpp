// The race of a channels-last INT8 convolution's other kernels against its cuDNN plan
// (int8_conv_cudnn.cpp chooses the plan and calls this for layers with an int8 Y and
// an int8 Z or none): cuBLASLt's GEMM (int8_pointwise_gemm.h) for 1x1, stride-1,
// unpadded layers and the tiles of Kiln's MMA kernel (int8_conv_mma.h) that fit the
// shape are timed on the layer's buffers; the fastest, the plan included, is kept in
// the layer's state (int8_conv_state.h) and every time goes into the implementation
// text. KILN_INT8_CONV's choice (read by int8_conv_cudnn.cpp) arrives as `forced`.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/layer_choice.h"
#include "backends/cuda/ops/int8_conv_state.h"

namespace kiln::cuda::int8conv {

// Y int8 and Z int8 or absent, one group, 2-D: the layers Kiln's own kernels and
// cuBLASLt's GEMM may take.
bool int8EpilogueLayer(const CudnnInt8State& s) {
  const ConvGeometry& g = s.geometry;
  return g.x.size() == 4 && g.x[1] == g.w[1] && s.quantizedOutput &&
         (!s.residual || s.zType == DataType::kInt8);
}

namespace {

// True for the layers int8_pointwise_gemm.h runs: 1x1, stride 1, unpadded.
bool isPointwiseGemmLayer(const CudnnInt8State& s) {
  const ConvGeometry& g = s.geometry;
  auto ones = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t d) { return d == 1; });
  };
  auto zeros = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t d) { return d == 0; });
  };
  return int8EpilogueLayer(s) && g.w[2] == 1 && g.w[3] == 1 && ones(g.strides) && zeros(g.pre) &&
         zeros(g.post);
}

Int8ConvMmaShape mmaShapeOf(const ConvGeometry& g) {
  Int8ConvMmaShape m;
  m.n = g.x[0];
  m.c = g.x[1];
  m.h = g.x[2];
  m.w = g.x[3];
  m.k = g.w[0];
  m.r = g.w[2];
  m.s = g.w[3];
  m.p = g.y[2];
  m.q = g.y[3];
  m.strideH = static_cast<int>(g.strides[0]);
  m.strideW = static_cast<int>(g.strides[1]);
  m.padH = static_cast<int>(g.pre[0]);
  m.padW = static_cast<int>(g.pre[1]);
  m.dilationH = static_cast<int>(g.dilations[0]);
  m.dilationW = static_cast<int>(g.dilations[1]);
  return m;
}

// Sets up `winner` ("cudnn", "gemm", "mma:<tile>": a recorded race) for `s` without
// timing; false when it no longer applies here (no cuBLASLt algorithm, no such tile).
Result<bool> adoptWinner(GpuKernelContext& ctx, const std::string& winner, int64_t rows,
                         int64_t channels, int64_t outChannels, CudnnInt8State* s) {
  if (winner == "cudnn") return true;
  if (winner == "gemm") {
    if (!isPointwiseGemmLayer(*s)) return false;
    std::string why;
    KILN_ASSIGN_OR_RETURN(
        s->gemm, planInt8PointwiseGemm(ctx, rows, channels, outChannels, s->residual, s->relu,
                                       static_cast<const float*>(s->gemmBias.data()), &why));
    return s->gemm != nullptr;
  }
  for (int tile : int8ConvMmaTiles(s->mmaShape)) {
    if (winner == "mma:" + int8ConvMmaTileName(tile)) {
      s->kilnTile = tile;
      return true;
    }
  }
  return false;
}

// The scales of Kiln's kernel and cuBLASLt's epilogue (alpha = scale x out scale, bias
// x out scale, beta = out scale) on the device, and the MMA kernel's shape.
Status prepareOtherKernels(CudnnInt8State* s) {
  std::vector<float> alpha(s->hostScale), bias(s->hostBias);
  for (float& v : alpha) v *= s->hostOutScale;
  for (float& v : bias) v *= s->hostOutScale;
  KILN_RETURN_IF_ERROR(uploadFloats(&s->gemmAlpha, alpha, "int8 GEMM alpha"));
  KILN_RETURN_IF_ERROR(uploadFloats(&s->gemmBias, bias, "int8 GEMM bias"));
  s->gemmBeta = s->hostOutScale;
  s->mmaShape = mmaShapeOf(s->geometry);
  return Status::ok();
}

Result<bool> adoptRecord(GpuKernelContext& ctx, const CudnnPlanRecord& record, CudnnInt8State* s,
                         std::string* how) {
  const ConvGeometry& g = s->geometry;
  KILN_ASSIGN_OR_RETURN(
      const bool adopted,
      adoptWinner(ctx, record.raceWinner, g.y[0] * g.y[2] * g.y[3], g.x[1], g.y[1], s));
  if (adopted) *how += "; " + record.raceWinner + " won the race then {" + record.raceTimings + "}";
  return adopted;
}

}  // namespace

Result<bool> adoptRecordedWinner(GpuKernelContext& ctx, const CudnnPlanRecord& record,
                                 CudnnInt8State* s, std::string* how) {
  if (record.raceWinner.empty() || record.raceWinner == "cudnn") return false;
  KILN_RETURN_IF_ERROR(prepareOtherKernels(s));
  return adoptRecord(ctx, record, s, how);
}

Result<bool> adoptPlannedWinner(GpuKernelContext& ctx, const std::string& winner,
                                CudnnInt8State* s) {
  if (winner == "cudnn" || !int8EpilogueLayer(*s)) return false;
  KILN_RETURN_IF_ERROR(prepareOtherKernels(s));
  const ConvGeometry& g = s->geometry;
  return adoptWinner(ctx, winner, g.y[0] * g.y[2] * g.y[3], g.x[1], g.y[1], s);
}

// cuBLASLt's GEMM (1x1 layers) and the tiles of Kiln's MMA kernel timed against the
// chosen plan; the fastest runs (`forced`: "gemm" or "mma" takes the fastest of that
// kind when it exists). `how` gains every time.
Status raceTheOtherKernels(GpuKernelContext& ctx, cudnnHandle_t handle,
                           const CudnnBindings& bindings, const DeviceTensor& x,
                           const DeviceTensor& w, const void* z, void* y, const std::string& forced,
                           const std::string& key, const CudnnPlanRecord* earlier,
                           CudnnInt8State* s, std::string* how) {
  const ConvGeometry& g = s->geometry;
  const int64_t rows = g.y[0] * g.y[2] * g.y[3], channels = g.x[1], outChannels = g.y[1];
  KILN_RETURN_IF_ERROR(prepareOtherKernels(s));
  const auto* alphaData = static_cast<const float*>(s->gemmAlpha.data());
  const auto* biasData = static_cast<const float*>(s->gemmBias.data());
  if (forced.empty() && earlier && !earlier->raceWinner.empty()) {
    KILN_ASSIGN_OR_RETURN(const bool adopted, adoptRecord(ctx, *earlier, s, how));
    if (adopted) return Status::ok();
  }
  if (s->planMs < 0) {
    KILN_ASSIGN_OR_RETURN(void* workspace, convWorkspace(ctx, s->plan->workspace));
    KILN_ASSIGN_OR_RETURN(s->planMs, timeOnStream(ctx.stream(), [&] {
                            return executeCudnnPlan(handle, *s->plan, bindings, workspace);
                          }));
  }
  std::ostringstream text;
  text << "; vs cudnn " << s->planMs << "ms";
  float best = forced.empty() ? s->planMs : 1e30f;
  // Every complete choice that ran (cuDNN's plan as its engine configuration), for a
  // builder to time one by one.
  std::vector<std::pair<LayerChoice, float>> ran(1);
  ran[0].first.form = "cudnn";
  ran[0].first.hasEngine = true;
  ran[0].first.engine = s->plan->choice;
  ran[0].second = s->planMs;
  if (isPointwiseGemmLayer(*s) && forced.rfind("mma", 0) != 0) {
    std::string why;
    KILN_ASSIGN_OR_RETURN(
        std::shared_ptr<Int8PointwiseGemm> gemm,
        planInt8PointwiseGemm(ctx, rows, channels, outChannels, s->residual, s->relu,
                              static_cast<const float*>(s->gemmBias.data()), &why));
    if (gemm) {
      Result<float> ms = timeOnStream(ctx.stream(), [&] {
        return runInt8PointwiseGemm(ctx, *gemm, x.data, w.data, alphaData, s->gemmBeta, z, y);
      });
      if (ms.isOk()) {
        ran.push_back({LayerChoice{}, ms.value()});
        ran.back().first.form = "gemm";
        text << ", cublasLt GEMM " << ms.value() << "ms";
        if (ms.value() < best) {
          best = ms.value();
          s->gemm = std::move(gemm);
        }
      } else {
        text << ", cublasLt GEMM failed: " << ms.status().message();
      }
    } else {
      text << ", no cublasLt GEMM (" << why << ")";
    }
  }
  for (int tile : forced == "gemm" ? std::vector<int>{} : int8ConvMmaTiles(s->mmaShape)) {
    if (forced.rfind("mma:", 0) == 0 && forced.substr(4) != int8ConvMmaTileName(tile)) continue;
    Result<float> ms = timeOnStream(ctx.stream(), [&] {
      return runInt8ConvMma(tile, s->mmaShape, x.data, w.data, alphaData, biasData, s->gemmBeta, z,
                            y, s->relu, ctx.stream());
    });
    if (ms.isOk()) {
      ran.push_back({LayerChoice{}, ms.value()});
      ran.back().first.form = "mma:" + int8ConvMmaTileName(tile);
      text << ", kiln MMA " << int8ConvMmaTileName(tile) << " " << ms.value() << "ms";
      if (ms.value() < best) {
        best = ms.value();
        s->gemm.reset();
        s->kilnTile = tile;
      }
    } else {
      text << ", kiln MMA " << int8ConvMmaTileName(tile) << " failed: " << ms.status().message();
    }
  }
  *how += text.str();
  if (forced.empty()) {
    const std::string winner = s->kilnTile >= 0 ? "mma:" + int8ConvMmaTileName(s->kilnTile)
                               : s->gemm        ? "gemm"
                                                : "cudnn";
    rememberRaceWinner(cudnnPlanStoreOf(ctx), key, winner, text.str().substr(2));
    std::vector<TimedChoice> offers;
    for (const auto& [c, ms] : ran) offers.push_back({encodeLayerChoice(c), ms});
    ctx.offerChoices(choicesWorthTiming(offers));
  }
  return Status::ok();
}

}  // namespace kiln::cuda::int8conv
