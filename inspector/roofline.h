// The roofline per engine layer: FLOPs, bytes moved and arithmetic intensity of every
// layer of an EngineReport (a Kiln plan or a TensorRT engine exported by trtexec alike),
// and, where the layer is timed, its achieved FLOP/s and bytes/s against a device's peaks.
// No Qt; the CSV export, `kiln inspect --roofline` and the advisor's below-roofline rule
// read it.
//
// Definitions (docs/advisor.md has them with examples):
//   FLOPs      a multiply-add is 2. Convolution 2 * output elements * (C/groups) * kernel;
//              GEMM 2 * M * N * K; attention 2 * B * H * Sq * Sk * (D + Dv) (QK^T and PV;
//              the softmax is not counted); a fused bias, residual or activation adds one
//              per output element each; a pointwise chain one per output element per op
//              (Casts free); pooling output elements * window; reductions, softmax and
//              norms one per input element; data movement (Reformat, Shuffle, Transpose,
//              Slice, Concat, Gather, copies) 0.
//   bytes      every input and output tensor at the report's dimensions and types, plus
//              the weights (Kiln: the initializers among the inputs; trtexec: the layer's
//              "Weights" and "Bias" counts). Logical sizes: vectorized formats' channel
//              padding is not counted; caches are assumed cold (each byte moves once).
//   intensity  FLOPs / bytes.
//   roof       min(peak FLOP/s at the layer's precision, intensity * peak DRAM bytes/s).
//   percent    100 * achieved FLOP/s / roof; for a layer of 0 FLOPs, achieved bytes/s over
//              the peak bandwidth.
// A dimension that is dynamic (-1) or missing makes the count unknown, never a guess.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine_report.h"
#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/shape_inference.h"

namespace kiln::inspector {

// A device's peaks: tensor cores for FP16/BF16 and INT8/FP8, CUDA cores for FP32; from
// the vendor table in roofline.cpp (dense, no sparsity) or measured on the device by
// `kiln device --calibrate` (measured_peaks.h), as `source` says.
struct DevicePeaks {
  std::string name;      // "H100 SXM"
  double fp32Flops = 0;  // FLOP/s
  double fp16Flops = 0;  // FP16 and BF16 tensor-core FLOP/s
  double int8Ops = 0;    // INT8 (and FP8) tensor-core OP/s
  double dramBytesPerSecond = 0;
  // Where the numbers come from, in words: "vendor datasheet, dense", or "measured
  // 2026-11-29 (METHOD)" with the fields it did not measure named as the vendor's.
  std::string source = "vendor datasheet, dense";
  // The compute peak for a layer precision ("FP32", "FP16", "BF16", "INT8", "FP8", "TF32";
  // anything else, or a peak left at 0: FP32's).
  double computePeak(const std::string& precision) const;
};

// The table of known GPUs (H100 SXM, H100 PCIe, H200, A100 80GB and 40GB, L4, RTX 4090).
const std::vector<DevicePeaks>& knownDevicePeaks();
// The peaks `kiln device --calibrate` measured for this device name (measured_peaks.h),
// else the table's entry whose name a device name ("NVIDIA H100 80GB HBM3", "h200",
// "NVIDIA GeForce RTX 4090") names; nullopt for an unmeasured CPU or an unknown GPU.
std::optional<DevicePeaks> peaksForDevice(const std::string& deviceName);
// `text` with ASCII letters lowered (device names and precisions compare this way).
std::string asciiLower(std::string text);

struct LayerRoofline {
  double flops = -1;                   // -1: unknown
  double bytes = -1;                   // -1: unknown
  double intensity = -1;               // FLOPs per byte; -1 when either is unknown or bytes are 0
  double achievedFlops = -1;           // FLOP/s over the layer's time; -1 untimed
  double achievedBytesPerSecond = -1;  // bytes/s over the layer's time; -1 untimed
  double roofFlops = -1;               // the roof at this intensity; -1 without peaks
  double percentOfRoof = -1;           // 0..100 (above 100: the peaks are too low)
  std::string unknown;                 // why flops or bytes are unknown ("" when known)
};

// FLOPs of one network node at `shapes`, fused ai.kiln layers included (FusedConv,
// QuantizedConv, FusedConvMaxPool, FusedMatMul, QuantizedMatMul, Fp8MatMul,
// FusedAttention, PointwiseChain); ONNX ops through nodeFlops (flops.h). nullopt when a
// needed shape is not concrete.
std::optional<double> layerNodeFlops(const Node& node, const ShapeInferenceResult& shapes);

// Sets each layer's `flops` from the plan's network at its first profile's opt shapes
// (the shapes the report's tensors have). Layers whose node is not found, or whose
// shapes are not concrete, keep -1.
void annotatePlanFlops(const Plan& plan, EngineReport* report);

// FLOPs of a report layer: its `flops` when set (Kiln plans), else derived from what a
// trtexec export gives (Convolution: Kernel, Groups, output dims; MatrixMultiply: tensor
// dims or Weights/OutMaps; elementwise and activations: output elements; data movement
// 0). nullopt when it cannot tell, with the reason in `why`.
std::optional<double> reportLayerFlops(const ReportLayer& layer, std::string* why = nullptr);
// Bytes the layer reads and writes (inputs, outputs, weights); nullopt with the reason.
std::optional<double> reportLayerBytes(const ReportLayer& layer, std::string* why = nullptr);

// The roofline of every layer, in the report's order. `peaks` may be null (no percent).
std::vector<LayerRoofline> layerRooflines(const EngineReport& report, const DevicePeaks* peaks);

// The roofline as an aligned table (layer, precision, GFLOP, MB, FLOP/B, ms, TFLOP/s, GB/s,
// % of roof), then the totals and which peaks were used.
std::string formatRooflineTable(const EngineReport& report, const DevicePeaks* peaks);

}  // namespace kiln::inspector
