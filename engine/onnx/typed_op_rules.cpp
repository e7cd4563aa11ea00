// The typing rules of the strongly typed export. An op belongs to kKeepsOwnTypes (its op
// table row's keepsOwnTypes, kiln/op_table.h) when its
// schema fixes an output type by attribute (Cast's `to`, ConstantOfShape's `value`,
// a generator's `dtype`), when its float inputs must be tensor(float) (NonMaxSuppression,
// DynamicQuantizeLinear), when its types are a quantization contract (Q/DQ), or when it
// runs subgraphs (their bodies declare their own types). Everything else in ai.onnx
// types its float values with one parameter T, which float16 and (from opset 13 for
// most ops) bfloat16 satisfy.
#include "onnx/typed_op_rules.h"

#include "kiln/op_table.h"

#include <set>

namespace kiln::typed_export {
namespace {

// Ops whose type constraint gained tensor(bfloat16) in opset 22 (ONNX 1.17).
const std::set<std::string>& bfloat16InOpset22() {
  static const std::set<std::string> ops = {"Acos",
                                            "Acosh",
                                            "Asin",
                                            "Asinh",
                                            "Atan",
                                            "Atanh",
                                            "AveragePool",
                                            "Conv",
                                            "ConvTranspose",
                                            "Cos",
                                            "Cosh",
                                            "DeformConv",
                                            "Det",
                                            "Dropout",
                                            "Elu",
                                            "GRU",
                                            "GlobalAveragePool",
                                            "GlobalLpPool",
                                            "GlobalMaxPool",
                                            "GridSample",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "InstanceNormalization",
                                            "LSTM",
                                            "LpNormalization",
                                            "LpPool",
                                            "MaxPool",
                                            "MaxRoiPool",
                                            "MaxUnpool",
                                            "Mish",
                                            "NegativeLogLikelihoodLoss",
                                            "RNN",
                                            "RoiAlign",
                                            "Round",
                                            "Selu",
                                            "Sin",
                                            "Sinh",
                                            "Softplus",
                                            "Softsign",
                                            "Tan",
                                            "ThresholdedRelu"};
  return ops;
}

bool startsWith(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

OpTyping opTyping(const Node& node, std::string* why) {
  if (!node.domain.empty() && node.domain != "ai.onnx") {
    *why = "domain '" + node.domain + "' is not ai.onnx";
    return OpTyping::kKeepsOwnTypes;
  }
  if (node.hasSubgraphs()) {
    *why = "control flow: its bodies declare their own types";
    return OpTyping::kKeepsOwnTypes;
  }
  if (node.opType == "Shape" || node.opType == "Size") return OpTyping::kReadsAnyType;
  const ops::OpRow* row = ops::findOp(node.opType);
  if ((row && row->keepsOwnTypes) || startsWith(node.opType, "Sequence")) {
    *why = "its output types are fixed by its attributes or its inputs must be float32";
    return OpTyping::kKeepsOwnTypes;
  }
  return OpTyping::kFollowsData;
}

int bfloat16SinceOpset(const std::string& opType) {
  return bfloat16InOpset22().count(opType) ? 22 : 13;
}

bool inputKeepsFloat32(const Node& node, size_t slot) {
  if (node.opType == "Resize") return slot == 1 || slot == 2;
  if (node.opType == "Upsample") return slot == 1;
  return false;
}

bool outputKeepsType(const Node& node, size_t slot) {
  return node.opType == "LayerNormalization" && slot > 0;
}

}  // namespace kiln::typed_export
