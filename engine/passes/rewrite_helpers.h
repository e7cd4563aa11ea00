// Queries and edits the rewrite passes share (no-op removal, shape-op merging, pad
// folding, GELU and normalization fusion): op checks, inferred shapes, constant
// values, bypassing a node, fresh initializer names, and where an ONNX op newer than
// the model's opset goes. Internal to kiln_engine.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "passes/pass.h"

// In their own namespace: pass.h grows shared helpers too, and names must not collide.
namespace kiln::passes::rewrite {

using Shapes = InferredShapes;

// Both shapes known and equal dim by dim (symbolic dims equal as expressions), and
// both types known and equal: one value can stand for the other.
bool sameShapeAndType(const Shapes& shapes, const std::string& a, const std::string& b);
// The shape as numbers when every dim is a known constant.
bool staticShape(const Shapes& shapes, const std::string& value, Shape* out);

// S when `value` [N, C, H, W] (C, H, W known) is a channels-first view of channels-last data
// S: Transpose(S, (0, 3, 1, 2)) of S [N, H, W, C], or Reshape(Transpose(S, (0, 2, 1))) of
// tokens S [N, H*W, C] (a transformer's tokens turned into an image); "" otherwise. Reading S
// instead moves nothing (channels_last_layout: the reformat folds away; patch_conv_as_matmul:
// patch rows in (kh, kw, C) order).
std::string channelsLastSourceOf(const Graph& g, const GraphIndex& index, const Shapes& shapes,
                                 const std::string& value);

// A default-domain node of type `op` whose first output is named (any arity: for
// ops with optional inputs and outputs; isOnnxOp fixes both).
bool isOnnxOpType(const Node& node, const char* op);
// `value`'s producer when `value` is read by node `reader` alone, else -1 (a chain link a
// rewrite may take over).
int soleProducer(const GraphIndex& index, const std::string& value, int reader);

// The float32 constant `name` of `count` elements (any count when count < 0), or nullptr
// (an empty name, a computed value, another type or size).
const Tensor* float32Constant(const GraphIndex& index, const std::string& name, int64_t count);
// The one element of a floating-point constant, or false.
bool scalarValue(const Tensor* t, double* value);
// `t` is a one-element floating-point constant within relative 1e-5 of `expected`
// (exporters write float32 roundings of sqrt(2), sqrt(2 / pi), ...); a float16 / bfloat16
// constant within half a unit in its last place (its type's rounding of `expected`).
bool isNearScalar(const Tensor* t, double expected);
// The relative rounding a constant of `t`'s type carries: half a unit in the last place of a
// float16 (2^-11) or bfloat16 (2^-8) constant, 0 for wider types (and for no tensor).
double halfUlpOf(const Tensor* t);
// `t` is a numeric constant (any count) whose every element equals `value` exactly.
bool allElementsEqual(const Tensor* t, double value);
// Every dim of `t` but the last is 1: its elements run along a value's last axis alone ([N],
// [1, N], [1, 1, N]; a bias, a per-column scale, a per-feature shift).
bool alongLastAxis(const Tensor& t);
// The elements of an integer constant, or false.
bool constantInts(const Tensor* t, std::vector<int64_t>* out);
// The one axis of an Unsqueeze, a Reduce* or a Squeeze (an attribute before opset
// `inputSince`, a constant input 1 from it), normalized for `rank`; -1 when there is not
// exactly one.
int64_t singleAxis(const Node& node, const GraphIndex& index, int inputSince, int64_t rank);
// float32, float16 or bfloat16: the float types both backends' kernels store.
bool isStorageFloat(DataType t);

// The input a two-input node passes on unchanged (up to broadcasting) because its other input
// is a constant whose every element is the op's neutral value: x + 0, x - 0, x * 1, x / 1,
// x and true, x or false (the constant on either side for Add, Mul, And, Or; second for Sub,
// Div); "" otherwise. Callers check the domain and the shapes they need.
std::string neutralOperand(const Node& node, const GraphIndex& index);

// `value` is attention scores: written by a MatMul, or by a Mul / Div whose first input a
// MatMul writes (Q K^T, scaled or not). For the mask passes that must not take a bias Add.
bool attentionScores(const Graph& g, const GraphIndex& index, const std::string& value);

// `node` computes each output element from its inputs' elements at the same (broadcast)
// position alone: the op table's positionwise rows, in the row's domain (Relu, Add, Gelu, ...).
bool isPositionwise(const Node& node);

// A default-domain node whose output is the numpy (multidirectional) broadcast of its inputs:
// the op table's broadcast shape forms (arithmetic, comparisons, logic, Max / Min / Sum / Mean)
// and Where (its own shape rule, the same broadcast). An output element reads, of each
// input, the element at its broadcast index.
bool broadcastsItsInputs(const Node& node);

// Every reader of `value` is a node in `inside` (no graph output, no other node).
bool readOnlyBy(const GraphIndex& index, const std::string& value, const std::set<int>& inside);

// Removes node `at`, whose output 0 always equals `source` (one of its inputs):
// readers of the output read `source` instead. When the output is a graph output,
// the node writing `source` writes it under the output's name instead, which needs
// `source` read by node `at` alone and written by a node. False, and the graph
// unchanged, when neither works or a subgraph reads the output by name.
bool bypassNode(Graph& g, const GraphIndex& index, int at, const std::string& source);

// Removes the Transpose nodes whose output nothing reads (no node, no graph output), to a
// fixpoint: the copies a layout rewrite left behind.
void removeUnreadTransposes(Graph& g);

// Erases the initializers among `candidates` that no node (subgraphs included), graph
// output or graph input names: the weights a rewrite replaced.
void dropUnreadInitializers(Graph& g, const std::set<std::string>& candidates);

// A name no initializer and no node output of `g` uses yet, derived from `base`.
std::string freshName(const Graph& g, const std::string& base);
// A default-domain `op` node named `name`, at `like`'s opset and ONNX index, reading
// `inputs` and writing one fresh value named after it; its provenance attributes say it
// stands for the ONNX nodes `sources` and that `pass` made it. For rewrites into several
// standard nodes (a patch embedding's copy and GEMM, a merged GEMM and its Split).
Node madeNode(const Graph& g, const Node& like, const std::string& name, const char* op,
              std::vector<std::string> inputs, const std::vector<std::string>& sources,
              const char* pass);

// `values` as a new int64 [n] initializer named after `base`; returns its name.
std::string addInt64Initializer(Graph& g, const std::string& base,
                                const std::vector<int64_t>& values);

Attribute intsAttribute(const std::vector<int64_t>& values);

// `perm` holds each of 0 .. size - 1 exactly once.
bool isPermutation(const std::vector<int64_t>& perm);

// A 2-D tensor [R, C] (any fixed-size element type) as its transpose [C, R]: a Gemm's
// transB = 1 weights [N, K] as the [K, N] that FusedMatMul and QuantizedMatMul take.
Tensor transposedMatrix(const Tensor& t);

// Constant `c` given `rank` dims (leading 1s) and permuted: out dim i is c's dim q[i]
// (Transpose(c, q) of the padded c).
Tensor permutedConstant(const Tensor& c, size_t rank, const std::vector<int64_t>& q);

// Gives `node` the domain and opset of ONNX op `node.opType`, introduced at opset
// `since`, in a model importing ai.onnx at `imported` (the opset of the nodes it
// replaces): the default domain when imported >= since; otherwise ai.kiln opset 1,
// where both backends register the same kernel under the same name (a plan file
// re-imports each node at its model's opsets, so an ai.onnx node newer than the
// model's import would not resolve there).
void placeNewerOnnxOp(Node* node, int imported, int since);

}  // namespace kiln::passes::rewrite
