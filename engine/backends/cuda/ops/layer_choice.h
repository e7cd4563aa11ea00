// A layer's choice among its implementations, as words, for the kernels that race
// cuDNN engine configurations against each other and against Kiln's own kernels: what a
// layer reports with GpuKernelContext::setChoice after timing its candidates, the builder
// stores with the winning tactic (TacticCandidate::choice) and an engine made from the
// plan takes back with plannedChoice() instead of timing again (issue 23: tactics as
// data; no process-wide record decides what a layer runs).
//
//   "<form>[ pad=<C>][ groups=<G>][ engine=<id>[ rtc] knobs=<type>:<value>,...]"
//
// form: FusedConv's "conv_epilogue", "fused_graph", "kiln_depthwise",
// "dense_block_diagonal" (fused_conv.cpp); Conv's and ConvTranspose's "cudnn" (conv.cpp);
// the channels-last INT8 convolution's "cudnn", "gemm", "mma:<tile>" (int8_conv_cudnn.cpp);
// FusedAttention's "kiln", "cudnn" (fused_attention_race.cpp). pad: X and W zero-padded to
// C channels; groups: the dense block-diagonal form's group count; engine, rtc, knobs: the
// cuDNN engine configuration (CudnnEngineChoice) of the forms that run a cuDNN plan.
// Host code; a plan is untrusted input, so parsing is strict and bounded.
#pragma once

#include <string>

#include "backends/cuda/ops/cudnn_conv.h"

namespace kiln::cuda {

struct LayerChoice {
  std::string form;
  int paddedChannels = 0;  // 0: X as it is
  int64_t groups = 0;      // 0: not the dense block-diagonal form
  bool hasEngine = false;
  CudnnEngineChoice engine;
};

// The text of `choice` (the grammar above).
std::string encodeLayerChoice(const LayerChoice& choice);

// `text` read back; false (and `out` untouched) for anything outside the grammar:
// an empty or unknown-looking form, an unknown or repeated token, a number out of
// range (pad 1..4096, groups 2..4096, engine 0..2^20, at most 64 knobs of type 0..1024),
// knobs or rtc without an engine.
bool parseLayerChoice(const std::string& text, LayerChoice* out);

// Whether two engine configurations are the same (engine, knobs, runtime compilation).
bool sameEngineChoice(const CudnnEngineChoice& a, const CudnnEngineChoice& b);

}  // namespace kiln::cuda
