// EngineReport: one engine as the views and the CLI see it, whatever it came from:
// a Kiln plan (its BuildRecord), or a real TensorRT engine exported by trtexec
// (--exportLayerInfo graph JSON, optionally with its --exportProfile JSON). The
// studio's layer table, engine graph, charts and reports read only this; the CLI's
// `kiln inspect` prints it. No Qt.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kiln/plan.h"
#include "kiln/status.h"

namespace kiln::inspector {

struct ReportTensor {
  std::string name;
  std::vector<int64_t> dimensions;  // -1 for a dynamic dimension
  std::string formatDatatype;       // "Row major linear FP32", as TensorRT writes it
  std::string location = "Device";
};

// An engine input or output as TensorRT 11's IEngineInspector describes it ("I/O
// Tensors"; TensorRT 10 wrote only the names, "Bindings").
struct ReportIoTensor {
  struct Profile {
    std::vector<int64_t> min, opt, max;
    std::string format;  // "Row major linear FP32 format (kLINEAR)"
  };
  std::string name;
  std::string ioMode;               // "Input", "Output"
  std::string dataType;             // "Float", "Half", "Int8", ...
  std::vector<int64_t> dimensions;  // -1 for a dynamic dimension
  std::string location = "Device";
  bool shapeInference = false;  // IsShapeInferenceIO
  std::vector<Profile> profiles;
};

struct ReportCandidate {
  std::string tactic;
  std::string source;     // "cudnn", "cublaslt", "kiln", "blas"
  std::string precision;  // "fp32", "fp16", ...
  double milliseconds = -1;
  bool fromCache = false;
  std::string rejected;  // empty when valid
  std::string detail;
  // What the layer chose inside the tactic (a cuBLASLt algorithm, a cuDNN engine
  // configuration, Kiln's kernel: GpuKernelContext::setChoice), which an engine made from
  // the plan runs without timing; "" when the tactic has no choice of its own.
  std::string choice;
};

struct ReportLayer {
  std::string name;       // "Conv_12 + Relu_13"
  std::string layerType;  // "Convolution", "CaskConvolution", ...
  std::string opType;     // ONNX op type when known ("" for trtexec layers)
  std::string precision;  // "FP32", "FP16", "INT8", ... ("" when unknown)
  std::string precisionReason;
  std::string tactic;
  std::string tacticValue;   // "0x..." as trtexec prints it
  std::string tacticSource;  // "" when unknown
  // The winning candidate's choice inside the tactic (LayerRecord::choice): with the
  // tactic it names the winner when a tactic offered several choices; "" when unknown.
  std::string choice;
  double milliseconds = -1;  // per-inference time: the profile's median, else the build timing
  double averageMs = -1;     // from a profile; -1 when none
  // What the profiled engine said it ran for the layer (a Kiln profile's
  // "implementation": the CUDA runtime's text, or a CPU plan's tactic); "" when unknown.
  std::string profiledImplementation;
  double percentage = -1;                // share of the total layer time, 0..100; -1 when untimed
  int64_t workspaceBytes = -1;           // -1 when unknown
  int64_t outputBytes = 0;               // bytes of its outputs at the reported dimensions
  std::vector<std::string> sourceNodes;  // ONNX nodes it implements (provenance)
  std::string fusion;                    // the pass that fused them
  std::vector<ReportTensor> inputs, outputs;
  std::vector<ReportCandidate> candidates;
  std::map<std::string, std::string> parameters;  // the rest, in words
  double flops = -1;  // Kiln plans: from the network at opt shapes (roofline.h); -1 unknown
};

struct EngineReport {
  std::string origin;                     // "kiln plan", "trtexec export", "kiln build"
  std::string title;                      // file or model name
  std::string backend;                    // "cpu", "cuda", "tensorrt"
  std::string device;                     // the plan's device name; "" when unknown
  std::vector<ReportLayer> layers;        // execution order
  std::vector<std::string> bindings;      // engine inputs and outputs
  std::vector<ReportIoTensor> ioTensors;  // TensorRT 11.x exports: the I/O tensors' details
  // Which IEngineInspector layout a trtexec export used: "TensorRT 10.x" (Bindings,
  // "Format/Datatype") or "TensorRT 11.x" (I/O Tensors, Format and DataType apart).
  std::string inspectorLayout;
  std::vector<std::string> warnings;
  int64_t activationBytes = -1;
  int64_t weightBytes = -1;
  double totalMs = -1;        // sum of the layers' times (-1 when untimed)
  int profileIterations = 0;  // the `count` of the profile the times came from; 0: build timings
  std::string summary;        // multi-line build summary in words
};

// The precision a "Format/Datatype" text names, in TensorRT's capitals: "Row major
// linear FP32" -> "FP32", "... Int8 format" -> "INT8", "Half" -> "FP16"; "" when none.
std::string precisionOfFormat(const std::string& formatDatatype);
// Bytes of one element of a precision ("FP16" -> 2, "INT8" -> 1); 0 when unknown.
int64_t elementBytes(const std::string& precision);

// True for a layer that costs nothing per run: one that only produces a constant value
// (an ONNX Constant, TensorRT's "Constant" layer), a Shape (its result depends on
// dimensions only: the CPU executor computes it once per input shape) or an Identity
// that keeps its type (an alias; TensorRT's Identity layers that convert a precision
// do work and are not counted). The studio's tables, charts and rule lists leave these
// out by default.
bool isConstantLayer(const ReportLayer& layer);

// The report of a built plan (times from the build's tactic timing).
EngineReport reportFromPlan(const Plan& plan, const std::string& title);
// Reads trtexec exports. `profilePath` may be empty. Errors name the file and, for a
// malformed layer, its index.
Result<EngineReport> reportFromTrtexec(const std::string& graphJsonPath,
                                       const std::string& profileJsonPath);
// Parses trtexec's --exportLayerInfo document (already loaded), in TensorRT 10.x's or
// 11.x's IEngineInspector layout (the 11.x "I/O Tensors" objects replace "Bindings";
// a tensor's "Format" and "DataType" replace "Format/Datatype"): both give the same
// layers, precisions and tensors.
Result<EngineReport> reportFromTrtexecJson(const nlohmann::json& graph, const std::string& title);
// Applies a --exportProfile document ([{"count": N}, {"name", "timeMs", "averageMs",
// "medianMs", "percentage"}...]) to the layers with those names; recomputes totals and
// percentages. Names the profile has but the report lacks are an error.
Status applyProfile(const nlohmann::json& profile, EngineReport* report);
// Reads a --exportProfile file and applies it (a line on the profile is added to the
// summary); errors name the file.
Status applyProfileFile(const std::string& profileJsonPath, EngineReport* report);
// Recomputes totalMs and each layer's percentage from the layers' milliseconds.
void updateShares(EngineReport* report);

// The layer table as CSV (RFC 4180 quoting): name, type, precision, tactic, time ms,
// percent, workspace bytes, output bytes, source nodes, then the roofline (roofline.h):
// flops, bytes, intensity (FLOP/byte), achieved TFLOP/s, GB/s and % of roofline against
// the peaks of `report.device` (empty where unknown or untimed).
std::string reportCsv(const EngineReport& report);
// The layer table as aligned text for the terminal, then the totals (layer count,
// total time and where the times came from).
std::string formatReportTable(const EngineReport& report);
// The whole report as JSON. Layers use TensorRT's IEngineInspector keys (Name,
// LayerType, Inputs, Outputs, Format/Datatype, TacticName, TacticValue) plus Kiln's
// (Precision, TimeMs, AverageMs, Percentage, SourceNodes, Candidates, ...), so the
// document reads back through reportFromTrtexecJson.
nlohmann::json reportJson(const EngineReport& report);

}  // namespace kiln::inspector
