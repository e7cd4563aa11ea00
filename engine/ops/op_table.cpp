// The op table's rows (kiln/op_table.h). One line per op: type, domain of definition,
// kind, shape form, TensorRT layer type, positionwise, keeps its own types.
#include "kiln/op_table.h"

#include <unordered_map>

namespace kiln::ops {

const std::vector<OpRow>& opTable() {
  using K = OpKind;
  using S = OpShapeForm;
  // clang-format off
  static const std::vector<OpRow> rows = {
    // Convolution
    {"Conv", "", K::kConvolution, S::kOwnRule, "Convolution", false, false},
    {"ConvInteger", "", K::kConvolution, S::kOwnRule, "", false, true},
    {"ConvTranspose", "", K::kConvolution, S::kOwnRule, "Deconvolution", false, false},
    {"DeformConv", "", K::kConvolution, S::kOwnRule, "", false, false},
    {"QLinearConv", "", K::kConvolution, S::kOwnRule, "", false, true},
    {"QuantizedConv", "ai.kiln", K::kConvolution, S::kOwnRule, "Convolution", false, false},
    // MatMul
    {"Einsum", "", K::kMatMul, S::kOwnRule, "Einsum", false, false},
    {"Gemm", "", K::kMatMul, S::kOwnRule, "MatrixMultiply", false, false},
    {"MatMul", "", K::kMatMul, S::kOwnRule, "MatrixMultiply", false, false},
    {"MatMulInteger", "", K::kMatMul, S::kOwnRule, "", false, true},
    {"QLinearMatMul", "", K::kMatMul, S::kOwnRule, "", false, true},
    {"Fp8MatMul", "ai.kiln", K::kMatMul, S::kOwnRule, "MatrixMultiply", false, false},
    {"QuantizedMatMul", "ai.kiln", K::kMatMul, S::kOwnRule, "MatrixMultiply", false, false},
    // Activation
    {"Celu", "", K::kActivation, S::kSameAsInput, "", false, false},
    {"Clip", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Elu", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Erf", "", K::kActivation, S::kSameAsInput, "Unary", true, false},
    {"Gelu", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"HardSigmoid", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"HardSwish", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Hardmax", "", K::kActivation, S::kSameAsInput, "", false, false},
    {"LeakyRelu", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"LogSoftmax", "", K::kActivation, S::kSameAsInput, "SoftMax", false, false},
    {"Mish", "", K::kActivation, S::kSameAsInput, "", true, false},
    {"PRelu", "", K::kActivation, S::kBroadcast, "", false, false},
    {"Relu", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Selu", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Shrink", "", K::kActivation, S::kSameAsInput, "", false, false},
    {"Sigmoid", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Softmax", "", K::kActivation, S::kSameAsInput, "SoftMax", false, false},
    {"Softplus", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"Softsign", "", K::kActivation, S::kSameAsInput, "Activation", false, false},
    {"Swish", "", K::kActivation, S::kSameAsInput, "", false, false},
    {"Tanh", "", K::kActivation, S::kSameAsInput, "Activation", true, false},
    {"ThresholdedRelu", "", K::kActivation, S::kSameAsInput, "Activation", false, false},
    {"BiasGelu", "com.microsoft", K::kActivation, S::kOwnRule, "", false, false},
    {"FastGelu", "com.microsoft", K::kActivation, S::kOwnRule, "", false, false},
    {"QuickGelu", "com.microsoft", K::kActivation, S::kSameAsInput, "Activation", true, false},
    // Normalization
    {"BatchNormalization", "", K::kNormalization, S::kOwnRule, "Scale", false, false},
    {"GroupNormalization", "", K::kNormalization, S::kSameAsInput, "Normalization", false, false},
    {"InstanceNormalization", "", K::kNormalization, S::kSameAsInput, "Normalization", false, false},
    {"LRN", "", K::kNormalization, S::kSameAsInput, "", false, false},
    {"LayerNormalization", "", K::kNormalization, S::kOwnRule, "Normalization", false, false},
    {"LpNormalization", "", K::kNormalization, S::kSameAsInput, "", false, false},
    {"MeanVarianceNormalization", "", K::kNormalization, S::kSameAsInput, "", false, false},
    {"RMSNormalization", "", K::kNormalization, S::kOwnRule, "", false, false},
    {"AddLayerNorm", "ai.kiln", K::kNormalization, S::kOwnRule, "Normalization", false, false},
    {"SimplifiedLayerNormalization", "com.microsoft", K::kNormalization, S::kOwnRule, "", false, false},
    {"SkipLayerNormalization", "com.microsoft", K::kNormalization, S::kOwnRule, "", false, false},
    // Pooling
    {"AveragePool", "", K::kPooling, S::kOwnRule, "Pooling", false, false},
    {"GlobalAveragePool", "", K::kPooling, S::kOwnRule, "Reduce", false, false},
    {"GlobalLpPool", "", K::kPooling, S::kOwnRule, "", false, false},
    {"GlobalMaxPool", "", K::kPooling, S::kOwnRule, "Reduce", false, false},
    {"LpPool", "", K::kPooling, S::kOwnRule, "", false, false},
    {"MaxPool", "", K::kPooling, S::kOwnRule, "Pooling", false, false},
    {"MaxRoiPool", "", K::kPooling, S::kOwnRule, "", false, false},
    {"MaxUnpool", "", K::kPooling, S::kOwnRule, "", false, false},
    {"RoiAlign", "", K::kPooling, S::kOwnRule, "", false, false},
    // Elementwise
    {"Abs", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Acos", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Acosh", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Add", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"And", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    {"Asin", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Asinh", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Atan", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Atanh", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"BitShift", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"BitwiseAnd", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"BitwiseNot", "", K::kElementwise, S::kSameAsInput, "", false, false},
    {"BitwiseOr", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"BitwiseXor", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"Cast", "", K::kElementwise, S::kOwnRule, "Cast", true, true},
    {"CastLike", "", K::kElementwise, S::kOwnRule, "", false, true},
    {"Ceil", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Cos", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Cosh", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"DequantizeLinear", "", K::kElementwise, S::kOwnRule, "Dequantize", false, true},
    {"Div", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"DynamicQuantizeLinear", "", K::kElementwise, S::kOwnRule, "", false, true},
    {"Equal", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    {"Exp", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Floor", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Greater", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    {"GreaterOrEqual", "", K::kElementwise, S::kBroadcastToBool, "", false, false},
    {"IsInf", "", K::kElementwise, S::kOwnRule, "Unary", false, false},
    {"IsNaN", "", K::kElementwise, S::kOwnRule, "Unary", false, false},
    {"Less", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    {"LessOrEqual", "", K::kElementwise, S::kBroadcastToBool, "", false, false},
    {"Log", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Max", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"Mean", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"Min", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"Mod", "", K::kElementwise, S::kBroadcast, "", false, false},
    {"Mul", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"Neg", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Not", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Or", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    {"Pow", "", K::kElementwise, S::kBroadcast, "ElementWise", false, false},
    {"QuantizeLinear", "", K::kElementwise, S::kOwnRule, "Quantize", false, true},
    {"Reciprocal", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Round", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Sign", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Sin", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Sinh", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Sqrt", "", K::kElementwise, S::kSameAsInput, "Unary", true, false},
    {"Sub", "", K::kElementwise, S::kBroadcast, "ElementWise", true, false},
    {"Sum", "", K::kElementwise, S::kBroadcast, "ElementWise", false, false},
    {"Tan", "", K::kElementwise, S::kSameAsInput, "Unary", false, false},
    {"Where", "", K::kElementwise, S::kOwnRule, "Select", false, false},
    {"Xor", "", K::kElementwise, S::kBroadcastToBool, "ElementWise", false, false},
    // Shape
    {"BroadcastGatherElements", "ai.kiln", K::kShape, S::kOwnRule, "Gather", false, false},
    {"Compress", "", K::kShape, S::kOwnRule, "", false, false},
    {"Concat", "", K::kShape, S::kOwnRule, "Concatenation", false, false},
    {"ConstantOfShape", "", K::kShape, S::kOwnRule, "Fill", false, true},
    {"DepthToSpace", "", K::kShape, S::kOwnRule, "", false, false},
    {"Expand", "", K::kShape, S::kOwnRule, "Slice", false, false},
    {"EyeLike", "", K::kShape, S::kOwnRule, "", false, true},
    {"Flatten", "", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"Gather", "", K::kShape, S::kOwnRule, "Gather", false, false},
    {"GatherElements", "", K::kShape, S::kOwnRule, "Gather", false, false},
    {"GatherND", "", K::kShape, S::kOwnRule, "Gather", false, false},
    {"Identity", "", K::kShape, S::kSameAsInput, "Identity", true, false},
    {"NonZero", "", K::kShape, S::kOwnRule, "NonZero", false, false},
    {"OneHot", "", K::kShape, S::kOwnRule, "", false, false},
    {"Pad", "", K::kShape, S::kOwnRule, "Padding", false, false},
    {"Range", "", K::kShape, S::kOwnRule, "Fill", false, true},
    {"Reshape", "", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"Resize", "", K::kShape, S::kOwnRule, "Resize", false, false},
    {"ReverseSequence", "", K::kShape, S::kOwnRule, "", false, false},
    {"Scatter", "", K::kShape, S::kSameAsInput, "", false, false},
    {"ScatterElements", "", K::kShape, S::kSameAsInput, "Scatter", false, false},
    {"ScatterND", "", K::kShape, S::kSameAsInput, "Scatter", false, false},
    {"Shape", "", K::kShape, S::kOwnRule, "Shape", false, false},
    {"Size", "", K::kShape, S::kOwnRule, "", false, false},
    {"Slice", "", K::kShape, S::kOwnRule, "Slice", false, false},
    {"SpaceToDepth", "", K::kShape, S::kOwnRule, "", false, false},
    {"Split", "", K::kShape, S::kOwnRule, "Slice", false, false},
    {"Squeeze", "", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"StridedCopy", "ai.kiln", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"Roll", "ai.kiln", K::kShape, S::kSameAsInput, "Slice", false, false},
    {"Tile", "", K::kShape, S::kOwnRule, "Slice", false, false},
    {"TopK", "", K::kShape, S::kOwnRule, "TopK", false, false},
    {"Transpose", "", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"Trilu", "", K::kShape, S::kSameAsInput, "", false, false},
    {"Unique", "", K::kShape, S::kOwnRule, "", false, false},
    {"Unsqueeze", "", K::kShape, S::kOwnRule, "Shuffle", false, false},
    {"Upsample", "", K::kShape, S::kOwnRule, "", false, false},
    // Reduction
    {"ArgMax", "", K::kReduction, S::kOwnRule, "", false, false},
    {"ArgMin", "", K::kReduction, S::kOwnRule, "", false, false},
    {"CumSum", "", K::kReduction, S::kSameAsInput, "Scan", false, false},
    {"ReduceMax", "", K::kReduction, S::kOwnRule, "Reduce", false, false},
    {"ReduceMean", "", K::kReduction, S::kOwnRule, "Reduce", false, false},
    {"ReduceMin", "", K::kReduction, S::kOwnRule, "Reduce", false, false},
    {"ReduceProd", "", K::kReduction, S::kOwnRule, "Reduce", false, false},
    {"ReduceSum", "", K::kReduction, S::kOwnRule, "Reduce", false, false},
    // Attention
    {"Attention", "", K::kAttention, S::kOwnRule, "Attention", false, false},
    {"RotaryEmbedding", "", K::kAttention, S::kOwnRule, "", false, false},
    {"ScaledDotProductAttention", "", K::kAttention, S::kOwnRule, "", false, false},
    {"GroupQueryAttention", "com.microsoft", K::kAttention, S::kOwnRule, "", false, false},
    {"MultiHeadAttention", "com.microsoft", K::kAttention, S::kOwnRule, "", false, false},
    {"PackedAttention", "com.microsoft", K::kAttention, S::kOwnRule, "", false, false},
    // Fused
    {"FusedAttention", "ai.kiln", K::kFused, S::kOwnRule, "Attention", false, false},
    {"FusedConv", "ai.kiln", K::kFused, S::kOwnRule, "Convolution", false, false},
    {"FusedConvMaxPool", "ai.kiln", K::kFused, S::kOwnRule, "Convolution", false, false},
    {"FusedMatMul", "ai.kiln", K::kFused, S::kOwnRule, "MatrixMultiply", false, false},
    {"PointwiseChain", "ai.kiln", K::kFused, S::kOwnRule, "PointWiseV2", true, false},
    {"ScaledMaskedSoftmax", "ai.kiln", K::kFused, S::kOwnRule, "SoftMax", false, false},
    // Other
    {"Bernoulli", "", K::kOther, S::kOwnRule, "", false, true},
    {"BlackmanWindow", "", K::kOther, S::kOwnRule, "", false, true},
    {"ConcatFromSequence", "", K::kOther, S::kOwnRule, "", false, true},
    {"Constant", "", K::kOther, S::kOwnRule, "Constant", false, true},
    {"GRU", "", K::kOther, S::kOwnRule, "RNN", false, false},
    {"HammingWindow", "", K::kOther, S::kOwnRule, "", false, true},
    {"HannWindow", "", K::kOther, S::kOwnRule, "", false, true},
    {"If", "", K::kOther, S::kOwnRule, "Conditional", false, false},
    {"LSTM", "", K::kOther, S::kOwnRule, "RNN", false, false},
    {"Loop", "", K::kOther, S::kOwnRule, "Loop", false, false},
    {"MelWeightMatrix", "", K::kOther, S::kOwnRule, "", false, true},
    {"Multinomial", "", K::kOther, S::kOwnRule, "", false, true},
    {"NonMaxSuppression", "", K::kOther, S::kOwnRule, "", false, true},
    {"Optional", "", K::kOther, S::kOwnRule, "", false, true},
    {"OptionalGetElement", "", K::kOther, S::kOwnRule, "", false, true},
    {"OptionalHasElement", "", K::kOther, S::kOwnRule, "", false, true},
    {"RNN", "", K::kOther, S::kOwnRule, "RNN", false, false},
    {"RandomNormal", "", K::kOther, S::kOwnRule, "", false, true},
    {"RandomNormalLike", "", K::kOther, S::kOwnRule, "", false, true},
    {"RandomUniform", "", K::kOther, S::kOwnRule, "", false, true},
    {"RandomUniformLike", "", K::kOther, S::kOwnRule, "", false, true},
    {"RegexFullMatch", "", K::kOther, S::kOwnRule, "", false, true},
    {"Scan", "", K::kOther, S::kOwnRule, "Loop", false, false},
    {"SplitToSequence", "", K::kOther, S::kOwnRule, "", false, true},
    {"StringConcat", "", K::kOther, S::kOwnRule, "", false, true},
    {"StringNormalizer", "", K::kOther, S::kOwnRule, "", false, true},
    {"StringSplit", "", K::kOther, S::kOwnRule, "", false, true},
    {"TfIdfVectorizer", "", K::kOther, S::kOwnRule, "", false, true},
  };
  // clang-format on
  return rows;
}

std::string_view opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kConvolution:
      return "Convolution";
    case OpKind::kMatMul:
      return "Matrix multiply";
    case OpKind::kActivation:
      return "Activation";
    case OpKind::kNormalization:
      return "Normalization";
    case OpKind::kPooling:
      return "Pooling";
    case OpKind::kElementwise:
      return "Elementwise";
    case OpKind::kShape:
      return "Shape / data movement";
    case OpKind::kReduction:
      return "Reduction";
    case OpKind::kAttention:
      return "Attention";
    case OpKind::kOther:
      return "Constants / other";
    case OpKind::kFused:
      return "Fused";
  }
  return "Constants / other";
}

const OpRow* findOp(std::string_view opType) {
  static const std::unordered_map<std::string_view, const OpRow*> byType = [] {
    std::unordered_map<std::string_view, const OpRow*> map;
    for (const OpRow& row : opTable()) map.emplace(row.opType, &row);
    return map;
  }();
  auto it = byType.find(opType);
  return it == byType.end() ? nullptr : it->second;
}

}  // namespace kiln::ops
