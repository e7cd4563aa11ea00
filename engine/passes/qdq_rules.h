// The Q/DQ matching the fold_qdq pass shares between its files (fold_qdq.cpp: the
// pass, propagation and erasure; fold_qdq_layers.cpp: quantizable layers).
// Internal to kiln_engine.
#pragma once

#include <string>
#include <vector>

#include "passes/fusion_passes.h"

namespace kiln::passes {

constexpr const char* kFoldQdqName = "fold_qdq";
// Marks the QuantizeLinear/DequantizeLinear pairs the implicit INT8 step inserted
// from a calibration cache: the layers they feed may quantize their float constant
// weights themselves.
constexpr const char* kCalibratedQuantizeAttribute = "kiln_calibrated";

// A default-domain QuantizeLinear / DequantizeLinear node with x, scale, [zero point].
bool isQuantize(const Node& node);
bool isDequantize(const Node& node);
// True when the node's scale is one constant value (per tensor) and its zero point,
// if any, is one constant value too.
bool isPerTensor(const Node& qdq, const GraphIndex& index);
// The scale as one float; call only when isPerTensor.
float perTensorScale(const Node& qdq, const GraphIndex& index);
// The zero point's value and type: the constant's, or 0 of the default type (uint8 for
// QuantizeLinear; the quantized input's type for DequantizeLinear, which `inputType`
// gives when known, kUndefined otherwise).
struct ZeroPoint {
  int64_t value = 0;
  DataType type = DataType::kUndefined;
};
ZeroPoint zeroPointOf(const Node& qdq, const GraphIndex& index, DataType inputType);

// The integer type of `value` as its writer makes it: a constant's type, a Q's zero
// point type, a quantized layer's output type, through the commuting layers rule 1
// moves; kUndefined when unknown.
DataType quantizedTypeOf(const Graph& graph, const GraphIndex& index, const std::string& value);

// The DequantizeLinear writing `value`, or -1.
int dequantizeProducing(const Graph& graph, const GraphIndex& index, const std::string& value);

// True when rule 3 (below) would fold the layer at `at` into a QuantizedConv /
// QuantizedMatMul (not an FP8 layer); the graph is left as it is.
bool quantizableLayerFolds(Network& network, const GraphIndex& index, int at);

// Rule 3 of fold_qdq (fold_qdq_layers.cpp): the quantizable layer at `at`, when its
// activation comes from a per-tensor DequantizeLinear, becomes a QuantizedConv /
// QuantizedMatMul. True when it rewrote; otherwise `whyNot` says why not ("" when
// the layer has no quantized input at all).
bool foldQuantizableLayer(Network& network, const GraphIndex& index, int at,
                          std::vector<PassApplication>* applied, std::string* whyNot);

// True when the DequantizeLinear `dq` reads float8e4m3fn values (a constant, a Q's,
// an Fp8MatMul's FP8 output, a graph input of that type, or its zero point's type).
bool readsFloat8(const Graph& graph, const GraphIndex& index, const Node& dq);
// Rule 3 for float8 (fold_qdq_fp8.cpp): the GEMM at `at`, whose activation's DQ reads
// float8e4m3fn, becomes an Fp8MatMul (ir/fp8_layers.h). True when it rewrote;
// otherwise `whyNot` says why not.
bool foldFp8Layer(Network& network, const GraphIndex& index, int at,
                  std::vector<PassApplication>* applied, std::string* whyNot);

// A new initializer named after `base` that no value of the graph uses yet.
std::string addInitializer(Graph& graph, const std::string& base, Tensor value);

}  // namespace kiln::passes
