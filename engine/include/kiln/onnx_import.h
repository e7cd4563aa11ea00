// ONNX import: reads a .onnx file (protobuf ModelProto) into a Network.
// The importer treats the file as untrusted: every failure is a Status whose
// message starts with the file name and names the node or tensor at fault.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/status.h"

namespace kiln {

// Answers whether an op (domain "" = ai.onnx) at an opset version can be run.
using OpSupportQuery =
    std::function<bool(const std::string& domain, const std::string& opType, int opset)>;

// Resolves external data from memory instead of a file (plans keep weights in their own
// blob): gets the tensor's external_data location, offset and length (length is the size
// the tensor's type and shape need when the model gives none) and returns exactly the
// bytes [offset, offset+length), or an error, such as an out-of-range offset, saying why.
using ExternalDataResolver =
    std::function<Result<std::string>(const std::string& location, int64_t offset, int64_t length)>;

struct ImportOptions {
  // Nodes for which this returns false are listed, all at once, in one error before
  // anything is imported. Empty: the CPU reference backend's kernels decide.
  OpSupportQuery isSupported;
  bool checkSupport = true;
  // When set, every externally stored tensor is read through it and its answer (bytes or
  // error, which the import error then carries with the tensor named) is final; empty:
  // files beside the model, as importOnnxFile describes.
  ExternalDataResolver externalData;
};

constexpr int kMinIrVersion = 3;
constexpr int kMaxIrVersion = 14;
constexpr int kMinDefaultOpset = 1;
constexpr int kMaxDefaultOpset = 28;

// Imports `path`. External data files are resolved relative to the model's folder;
// absolute paths and paths that leave that folder are refused.
Result<Network> importOnnxFile(const std::string& path, const ImportOptions& options = {});
// Imports serialized ModelProto bytes; `modelDir` resolves external data ("" = none allowed
// unless options.externalData resolves it).
Result<Network> importOnnxBytes(const std::string& bytes, const std::string& modelDir,
                                const std::string& displayName, const ImportOptions& options = {});

// Reads a serialized ONNX TensorProto (.pb) file into a Tensor (name in *name if given).
Result<Tensor> readTensorProtoFile(const std::string& path, std::string* name = nullptr);
// Writes a Tensor as a serialized ONNX TensorProto.
Status writeTensorProtoFile(const std::string& path, const Tensor& tensor, const std::string& name);

}  // namespace kiln
