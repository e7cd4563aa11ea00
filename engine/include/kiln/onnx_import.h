// ONNX import: reads a .onnx file (protobuf ModelProto) into a Network.
// The importer treats the file as untrusted: every failure is a Status whose
// message starts with the file name and names the node or tensor at fault.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

// Answers whether an op (domain "" = ai.onnx) at an opset version can be run.
using OpSupportQuery = std::function<bool(const std::string& domain, const std::string& opType, int opset)>;

struct ImportOptions {
  // Nodes for which this returns false are listed, all at once, in one error before
  // anything is imported. Empty: the CPU reference backend's kernels decide.
  OpSupportQuery isSupported;
  bool checkSupport = true;
};

constexpr int kMinIrVersion = 3;
constexpr int kMaxIrVersion = 14;
constexpr int kMinDefaultOpset = 1;
constexpr int kMaxDefaultOpset = 28;

// Imports `path`. External data files are resolved relative to the model's folder;
// absolute paths and paths that leave that folder are refused.
Result<Network> importOnnxFile(const std::string& path, const ImportOptions& options = {});
// Imports serialized ModelProto bytes; `modelDir` resolves external data ("" = none allowed).
Result<Network> importOnnxBytes(const std::string& bytes, const std::string& modelDir,
                                const std::string& displayName, const ImportOptions& options = {});

// Reads a serialized ONNX TensorProto (.pb) file into a Tensor (name in *name if given).
Result<Tensor> readTensorProtoFile(const std::string& path, std::string* name = nullptr);
// Writes a Tensor as a serialized ONNX TensorProto.
Status writeTensorProtoFile(const std::string& path, const Tensor& tensor, const std::string& name);

}  // namespace kiln
