// The activation a fused layer's epilogue takes: the node, or the chain of ONNX ops
// written for one activation, that reads a layer's output. fuse_conv_bias_activation
// (FusedConv) and fuse_matmul_bias_activation (FusedMatMul) share it, so both layers
// take the same forms under the same names. Internal to kiln_engine.
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace kiln::passes {

struct ActivationTail {
  std::vector<int> nodes;   // the activation's nodes, ascending
  bool decomposed = false;  // several ONNX ops written for one activation
  std::string output;       // the activation's output
  std::string activation = "none";
  float alpha = 0.f, beta = 0.f;  // activation_alpha, activation_beta
};

// Matches the activation reading `value`; fills `tail` and returns true, or returns
// false and leaves it as it was. The forms, and the activation each becomes:
//   Relu -> relu;  LeakyRelu(alpha) -> leaky_relu;  Sigmoid -> sigmoid;  Tanh -> tanh;
//   HardSigmoid(alpha, beta) -> hard_sigmoid;  HardSwish -> hard_swish;
//   Clip(min, max) with constant bounds -> clip(alpha = min, beta = max), relu for [0, inf);
//   Mul(x, Sigmoid(x)) -> silu;
//   Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) -> hard_swish (Paddle's export);
//   Gelu (ONNX, or ai.kiln's alias that fuse_gelu writes below opset 20) -> gelu_erf,
//   or gelu_tanh for approximate = "tanh";
//   x * 0.5 * (1 + erf(x / sqrt(2))) with its two products in any association
//   (Div, Erf, Add, Mul, Mul; fuse_gelu's job, matched here too for when it is off
//   or the shapes are unknown) -> gelu_erf.
// Every intermediate value is read by the next node of the chain alone, and `value`
// by the activation's nodes alone, so nothing outside sees a value that stops existing.
bool matchActivationTail(const Graph& graph, const GraphIndex& index, const std::string& value,
                         ActivationTail* tail);

// Writes `activation` and, where the activation has them, `activation_alpha` (leaky_relu,
// clip, hard_sigmoid) and `activation_beta` (clip, hard_sigmoid) onto `fused`.
void setActivationAttributes(const ActivationTail& tail, Node* fused);

}  // namespace kiln::passes
