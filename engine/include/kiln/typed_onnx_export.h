// Strongly typed ONNX export (TensorRT 11's input): Kiln's per-node precision
// decisions written into the original ONNX model. Nodes decided fp16/bf16 compute in
// that type, the rest stay float32, and Cast nodes sit at every boundary between the
// regions; float initializers read only by reduced nodes are stored in the reduced
// type. INT8 is written as explicit Q/DQ from a calibration cache (exportQdqOnnx).
// Design and limits: docs/strongly-typed-export.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/build_record.h"
#include "kiln/constraints_file.h"
#include "kiln/data_type.h"
#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

struct CalibrationTable;  // kiln/calibration.h

// What each ONNX node of the main graph should compute in, by display name
// (Node::displayName()): kFloat32, kFloat16 or kBFloat16. Nodes not named follow the
// type their first float input has in the export (a node a build folded away, such as
// a shape computation, joins the region around it).
struct NodePrecisions {
  std::map<std::string, DataType> byNode;
  std::map<std::string, std::string> reasons;  // why a node is what it is, by name
  // By value name: the type a float output is stored in where a layer stores its output
  // in another type than it computes in (--layer-output-types): the node writes its
  // compute type and a Cast after it stores the value in this type, which every reader
  // then reads (through a further Cast where it computes in another type).
  std::map<std::string, DataType> storedTypes;
  std::string source;  // in words, for the metadata: "plan 'a.kiln'", "constraints 'c.json'"
  std::vector<std::string> warnings;  // decisions that could not be carried over
};

// The decisions of a built plan: each layer's compute precision for every ONNX node
// it came from (LayerRecord::sourceNodes). `reduced` (fp16 or bf16) replaces every
// reduced precision when given; kUndefined keeps each layer's own. An INT8/FP8 layer
// counts as the build's float precision (fp16/bf16 when the build enabled one, else
// fp32) with a warning: Q/DQ export is not written from a plan. A layer whose output type
// differs from its precision gives its outputs' storedTypes. Errors: a record
// without layers (profiling verbosity none), a plan none of whose source nodes is a
// node of `network` (built from another model).
// With `quantized` kAsQdqFloat32 (an export that writes the calibration cache's Q/DQ
// pairs beside, `kiln export-onnx --from PLAN --calib-cache C`) an INT8/FP8 layer's nodes
// are float32 instead, no warning: between their DequantizeLinear and QuantizeLinear
// nodes, as TensorRT's explicit quantization wants them (a Cast there would keep it
// from fusing the pairs into the layer).
enum class QuantizedLayers { kAsBuildFloat, kAsQdqFloat32 };
Result<NodePrecisions> nodePrecisionsFromPlan(
    const BuildRecord& record, const Network& network, const std::string& planName,
    DataType reduced, QuantizedLayers quantized = QuantizedLayers::kAsBuildFloat);

// The decisions of a constraints file (`kiln debug precision`): a node takes the
// precision of the rule that names it (kiln/builder_config.h's findLayerRule: its own
// name wins over "*"); a node no rule names is free and takes `reduced` (fp16 or bf16;
// kUndefined: the type the file's rules name, else fp16). INT8/FP8 rules count as
// `reduced`. A layer_output_types rule naming a node gives its float outputs'
// storedTypes. A file whose mode is "none" has its rules ignored (every node free).
NodePrecisions nodePrecisionsFromConstraints(const PrecisionConstraints& constraints,
                                             const Network& network,
                                             const std::string& constraintsName, DataType reduced);

struct TypedExportOptions {
  // Graph inputs and outputs keep their float32 type (Casts after the inputs, before the
  // outputs); otherwise an input read only by reduced nodes, and an output a reduced
  // node writes, take the reduced type.
  bool keepIoTypes = false;
};

struct TypedExportResult {
  std::string bytes;  // the serialized ModelProto
  int reducedNodes = 0;
  int float32Nodes = 0;  // nodes with float values that stay float32
  int castsInserted = 0;
  int initializersConverted = 0;
  int64_t clampedWeights = 0;  // initializer values past the reduced type's range, clamped
  std::vector<std::string> float32NodeNames;
  // Nodes asked to run reduced that stay float32, each with why ("node 'x' (Cast): ...").
  std::vector<std::string> keptFloat32;
};

// Rewrites the model at `modelPath` (its main graph; subgraph bodies keep their types)
// so that each node computes in the type `precisions` gives it, where the op allows:
// ops whose output types are fixed by attributes or that need float32 inputs (Cast,
// ConstantOfShape, Random*, Range, Q/DQ, control flow, other domains ...) stay float32
// with Casts around them; Shape and Size read any type. Node names are kept (an
// unnamed node gets its display name), the metadata gains "kiln:precision_source" and
// "kiln:precision". Externally stored weights are written inline. Errors name the file:
// an unreadable model, ai.onnx opset below 6 (Cast's `to` is a string there) or below
// 13 with bf16, a model past 2 GiB.
Result<TypedExportResult> exportStronglyTypedOnnx(const std::string& modelPath,
                                                  const NodePrecisions& precisions,
                                                  const TypedExportOptions& options = {});
// The same rewrite of a serialized model already in memory (exportQdqOnnx's bytes, for
// the combined INT8 + FP16 export); `modelPath` names it in errors and is where external
// data would be read from.
Result<TypedExportResult> exportStronglyTypedOnnxBytes(const std::string& bytes,
                                                       const std::string& modelPath,
                                                       const NodePrecisions& precisions,
                                                       const TypedExportOptions& options = {});

struct QdqExportResult {
  std::string bytes;           // the serialized ModelProto
  int activationPairs = 0;     // QuantizeLinear/DequantizeLinear pairs on activations
  int weightDequantizers = 0;  // per-channel DequantizeLinear nodes on int8 weights
  int foldedBatchNorms = 0;    // BatchNormalizations folded into the INT8 Conv before them
  std::vector<std::string> floatLayers;  // "node: why" for Conv/MatMul/Gemm left in float
};

// Explicit INT8 (TensorRT's Q/DQ rules) from a `kiln calibrate` cache: a
// QuantizeLinear/DequantizeLinear pair (per-tensor scale amax/127, zero point 0) on the
// input of every Conv, MatMul and Gemm with constant float weights whose input has a
// usable range, and on the residual input of an Add an INT8 Conv's epilogue takes
// (the pairs an implicit INT8 build inserts); each such layer's weights stored int8
// with per-output-channel symmetric scales (max |w| / 127, in [-127, 127]) behind a
// DequantizeLinear with its axis; a BatchNormalization reading such a Conv's output alone
// is folded into the Conv's float weights and bias first (the Conv keeps its name, the
// BN's output name), as an implicit INT8 build folds it. Layers without a range, or whose
// input the cache
// pins, stay float (listed with why). Unnamed nodes get their display names; the
// metadata names the cache. Errors name the file: ai.onnx opset below 13 (per-channel
// DequantizeLinear), an unreadable model.
//
// kFp8 writes FP8 E4M3 instead, for GEMMs only (as TensorRT's and Kiln's FP8 layers):
// the pairs in front of MatMul/Gemm layers with constant weights become float8e4m3fn
// Q/DQ (per-tensor scale amax/448, zero point a float8 0), those weights float8e4m3fn
// with one per-tensor scale (max |w| / 448) behind a DequantizeLinear; every other pair
// (convolutions, residual Adds) is left out and its layer listed as float. Needs
// ai.onnx opset 19 (float8 Q/DQ); an older model is refused naming its opset.
//
// Ungrouped convolutions with fewer than `minConvChannels` input channels stay float, as
// in Kiln's builds for that target (kQdqGpuMinConvChannels: a CUDA build's rule, the
// default, since the export is for GPU deployment; 0: every convolution, as a CPU
// build quantizes). ResNet-50's 3-channel stem in INT8 measured 2.9 ms against the
// FP16 stem's 0.15 ms at batch 64 on an H200.
// `table` for a Q/DQ export that follows a built plan (`export-onnx --from PLAN
// --calib-cache C`): the input of every Conv, MatMul and Gemm of `network` that no INT8
// (or FP8) layer of `record` came from is pinned to float32, so the export quantizes what
// the plan ran quantized and nothing else (a layer the build left float, e.g. a GEMM
// whose fused activation has no INT8 kernel, gets no pair). A tensor another, quantized
// reader shares stays calibrated.
CalibrationTable calibrationFollowingPlan(const CalibrationTable& table, const BuildRecord& record,
                                          const Network& network);

enum class QdqFormat { kInt8, kFp8 };
constexpr int kQdqGpuMinConvChannels = 8;
Result<QdqExportResult> exportQdqOnnx(const std::string& modelPath, const CalibrationTable& table,
                                      const std::string& cacheName,
                                      QdqFormat format = QdqFormat::kInt8,
                                      int minConvChannels = kQdqGpuMinConvChannels);

}  // namespace kiln
