// ONNX export: writes a Network back out as a serialized ONNX ModelProto. Plans keep
// their network this way, with the weights moved out into the plan's own aligned blob
// (a WeightSink) and read back on import through ImportOptions::externalData.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

// Receives one initializer's bytes (as TensorProto raw_data would hold them) and returns
// where it stored them: an offset into the caller's blob. Return a non-ok Status to abort.
using WeightSink = std::function<Result<int64_t>(const std::string& name, const Tensor& tensor,
                                                 const std::string& rawBytes)>;

struct ExportOptions {
  // When set, every initializer (main graph and subgraphs) whose raw data is at least
  // `externalizeMinBytes` long is handed to the sink and written as external data with
  // location `externalLocation`, offset and length (ONNX's external_data key/values);
  // otherwise data stays inline as raw_data. String tensors have no raw data and always
  // stay inline.
  WeightSink weightSink;
  std::string externalLocation = "kiln-plan-weights";
  int64_t externalizeMinBytes = 0;
  // Also hand the `value` tensor of every Constant node (subgraphs included) to the sink,
  // named by the node's output. Many exporters (Paddle, spox) keep all weights in
  // Constant nodes rather than initializers. Other attribute tensors always stay inline.
  bool externalizeConstants = false;
};

// Serializes a Network as ONNX ModelProto bytes: ir_version, opset imports (the
// Network's opsets, plus the opset of any node whose domain they lack), producer, and
// the graph: nodes (in the graph's topological order, with name, domain and attributes,
// subgraphs included), inputs, outputs and value_info with their types and shapes, and
// initializers. Shapes: a constant dim becomes dim_value, a symbol dim_param with its
// name, an anonymous "unk__N" symbol a dim with neither (re-import makes it a fresh
// unknown), any other expression dim_param with its toString(). Round-trips through
// importOnnxBytes; node indices become the positions in the exported list. A Network
// built in code (irVersion 0) gets the lowest IR version its ai.onnx opset needs.
// Errors: a sink failure (with the initializer or Constant node named), a model past
// protobuf's 2 GiB.
Result<std::string> exportOnnxBytes(const Network& network, const ExportOptions& options = {});

// Writes exportOnnxBytes(network) with every weight inline to `path` (kIoError on failure).
Status exportOnnxFile(const Network& network, const std::string& path);

}  // namespace kiln
