#include "onnx/tensor_proto.h"

#include "kiln/file_io.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kiln/tensor_size.h"

namespace kiln::onnx_import {
namespace {

namespace fs = std::filesystem;

std::string describeTensor(const onnx::TensorProto& proto) {
  return "tensor '" + proto.name() + "'";
}

// Resolves an external-data location inside modelDir, refusing escapes.
Result<std::string> resolveExternalPath(const std::string& location, const std::string& modelDir,
                                        const std::string& what) {
  if (modelDir.empty()) return invalidArgument(what + ": external data is not allowed here");
  fs::path rel(location);
  if (location.empty() || rel.is_absolute()) {
    return invalidArgument(what + ": external data path '" + location +
                           "' must be relative to the model folder");
  }
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(modelDir), ec);
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec)
    return invalidArgument(what + ": external data path '" + location + "' cannot be resolved");
  auto [baseEnd, fullIt] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (baseEnd != base.end()) {
    return invalidArgument(what + ": external data path '" + location +
                           "' leaves the model folder");
  }
  return full.string();
}

Result<std::string> readExternalBytes(const onnx::TensorProto& proto, const std::string& modelDir,
                                      const ExternalDataResolver& resolver, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (...) {
      return parseError(describeTensor(proto) + ": bad external data field '" + kv.key() + "'");
    }
  }
  if (resolver) {
    if (length < 0) length = static_cast<int64_t>(expected);  // as for files: absent
    // A negative offset is never valid; refusing it here spares every resolver the check.
    if (offset < 0) return parseError(describeTensor(proto) + ": negative external data offset");
    Result<std::string> bytes = resolver(location, offset, length);
    if (!bytes.isOk()) return bytes.status().withContext(describeTensor(proto));
    return bytes;
  }
  KILN_ASSIGN_OR_RETURN(std::string path,
                        resolveExternalPath(location, modelDir, describeTensor(proto)));
  // Regular files only, checked on the opened descriptor: a FIFO would block the read,
  // a directory or device has no size to check the range against.
  Result<int64_t> size = regularFileSize(path);
  if (!size.isOk() && size.status().code() == StatusCode::kNotFound)
    return notFound(describeTensor(proto) + ": external data file '" + location + "' not found");
  if (!size.isOk()) return size.status().withContext(describeTensor(proto));
  const int64_t fileSize = size.value();
  if (length < 0) length = static_cast<int64_t>(expected);
  if (offset < 0 || offset > fileSize || length > fileSize - offset) {
    return parseError(describeTensor(proto) + ": external data range [" + std::to_string(offset) +
                      ", +" + std::to_string(length) + ") lies outside '" + location + "' (" +
                      std::to_string(fileSize) + " bytes)");
  }
  Result<std::string> bytes = readRegularFileRange(path, offset, length);
  if (!bytes.isOk()) return bytes.status().withContext(describeTensor(proto));
  return bytes;
}

// Sub-byte types arrive packed (int4/uint4/float4e2m1 two per byte, int2/uint2 four per
// byte, first element in the low bits); Kiln keeps one per byte, signed ones sign-extended.
bool isSignedSubByte(DataType type) {
  return type == DataType::kInt4 || type == DataType::kInt2;
}

size_t packedByteCount(DataType type, int64_t numel) {
  const int perByte = 8 / packedElementBits(type);
  return static_cast<size_t>((numel + perByte - 1) / perByte);
}

void unpackSubByte(const unsigned char* packed, int64_t numel, Tensor* out) {
  const int bits = packedElementBits(out->type());
  const int perByte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  const uint8_t signBit = static_cast<uint8_t>(1 << (bits - 1));
  const bool isSigned = isSignedSubByte(out->type());
  uint8_t* dst = out->data<uint8_t>();
  for (int64_t i = 0; i < numel; ++i) {
    uint8_t v = (packed[i / perByte] >> ((i % perByte) * bits)) & mask;
    if (isSigned && (v & signBit)) v |= static_cast<uint8_t>(~mask);
    dst[i] = v;
  }
}

Status fillFromRaw(const std::string& raw, const onnx::TensorProto& proto, Tensor* t) {
  const bool packed = packedElementBits(t->type()) != 0;
  const size_t expected = packed ? packedByteCount(t->type(), t->numel()) : t->byteSize();
  if (raw.size() != expected) {
    return parseError(describeTensor(proto) + ": holds " + std::to_string(raw.size()) +
                      " bytes, shape " + shapeToString(t->shape()) + " of " +
                      dataTypeName(t->type()) + " needs " + std::to_string(expected));
  }
  if (packed)
    unpackSubByte(reinterpret_cast<const unsigned char*>(raw.data()), t->numel(), t);
  else if (!raw.empty())
    std::memcpy(t->rawData(), raw.data(), raw.size());
  return Status::ok();
}

template <class Field>
Status checkCount(const Field& field, int64_t expected, const onnx::TensorProto& proto) {
  if (static_cast<int64_t>(field.size()) != expected) {
    return parseError(describeTensor(proto) + ": has " + std::to_string(field.size()) +
                      " values, shape needs " + std::to_string(expected));
  }
  return Status::ok();
}

Status fillFromTypedFields(const onnx::TensorProto& proto, Tensor* t) {
  const int64_t n = t->numel();
  switch (t->type()) {
    case DataType::kFloat32:
      KILN_RETURN_IF_ERROR(checkCount(proto.float_data(), n, proto));
      for (int64_t i = 0; i < n; ++i) t->data<float>()[i] = proto.float_data(i);
      return Status::ok();
    case DataType::kFloat64:
      KILN_RETURN_IF_ERROR(checkCount(proto.double_data(), n, proto));
      for (int64_t i = 0; i < n; ++i) t->data<double>()[i] = proto.double_data(i);
      return Status::ok();
    case DataType::kInt64:
      KILN_RETURN_IF_ERROR(checkCount(proto.int64_data(), n, proto));
      for (int64_t i = 0; i < n; ++i) t->data<int64_t>()[i] = proto.int64_data(i);
      return Status::ok();
    case DataType::kUInt32:
    case DataType::kUInt64:
      KILN_RETURN_IF_ERROR(checkCount(proto.uint64_data(), n, proto));
      for (int64_t i = 0; i < n; ++i) {
        if (t->type() == DataType::kUInt32)
          t->data<uint32_t>()[i] = static_cast<uint32_t>(proto.uint64_data(i));
        else
          t->data<uint64_t>()[i] = proto.uint64_data(i);
      }
      return Status::ok();
    case DataType::kString:
      KILN_RETURN_IF_ERROR(checkCount(proto.string_data(), n, proto));
      for (int64_t i = 0; i < n; ++i) t->strings()[i] = proto.string_data(i);
      return Status::ok();
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat4E2M1:
    case DataType::kInt2:
    case DataType::kUInt2: {
      // int32_data holds one packed byte per entry.
      KILN_RETURN_IF_ERROR(checkCount(proto.int32_data(),
                                      static_cast<int64_t>(packedByteCount(t->type(), n)), proto));
      std::vector<unsigned char> packed(proto.int32_data_size());
      for (int i = 0; i < proto.int32_data_size(); ++i)
        packed[i] = static_cast<unsigned char>(proto.int32_data(i));
      unpackSubByte(packed.data(), n, t);
      return Status::ok();
    }
    default: {
      // int32_data carries every type of 32 bits or fewer (float16/bfloat16 as bits).
      KILN_RETURN_IF_ERROR(checkCount(proto.int32_data(), n, proto));
      const size_t elem = dataTypeSize(t->type());
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = proto.int32_data(i);
        std::memcpy(static_cast<char*>(t->rawData()) + i * elem, &v,
                    elem);  // little-endian low bytes
      }
      return Status::ok();
    }
  }
}

}  // namespace

Result<Tensor> tensorFromProto(const onnx::TensorProto& proto, const std::string& modelDir,
                               const ExternalDataResolver& resolver) {
  const DataType type = static_cast<DataType>(proto.data_type());
  if (!isSupportedDataType(type)) {
    return unsupported(describeTensor(proto) + ": data type " + std::to_string(proto.data_type()) +
                       " is not supported");
  }
  if (proto.has_segment())
    return unsupported(describeTensor(proto) + ": segmented tensors are not supported");
  const Shape shape(proto.dims().begin(), proto.dims().end());
  Result<int64_t> checkedCount = checkedNumel(shape, describeTensor(proto));
  if (!checkedCount.isOk()) return Status(StatusCode::kParseError, checkedCount.status().message());
  const int64_t numel = checkedCount.value();
  // The data must be there before the tensor is allocated: a hostile file may
  // claim 2^40 elements and hold none. (A count past the byte cap saturates here
  // and fails either the data check or the cap below.)
  uint64_t wanted = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dataTypeSize(type), &wanted))
    wanted = std::numeric_limits<uint64_t>::max();
  const size_t expected = packedElementBits(type) ? packedByteCount(type, numel) : wanted;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (type == DataType::kString)
      return unsupported(describeTensor(proto) + ": external string data");
    KILN_RETURN_IF_ERROR(checkTensorSize(type, shape, describeTensor(proto)));
    KILN_ASSIGN_OR_RETURN(std::string bytes,
                          readExternalBytes(proto, modelDir, resolver, expected));
    Tensor t(type, shape);
    KILN_RETURN_IF_ERROR(fillFromRaw(bytes, proto, &t));
    return t;
  }
  const bool raw = proto.has_raw_data() && type != DataType::kString;
  const int64_t typedEntries = proto.float_data_size() + proto.int32_data_size() +
                               proto.string_data_size() + proto.int64_data_size() +
                               proto.double_data_size() + proto.uint64_data_size();
  // Typed fields hold at most 8 packed elements per entry (int4 in int32_data holds 2).
  if ((raw && proto.raw_data().size() < expected) || (!raw && numel > 8 * typedEntries)) {
    return parseError(describeTensor(proto) + ": shape " + shapeToString(shape) + " needs " +
                      std::to_string(numel) + " elements but the tensor holds fewer");
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, allocateTensor(type, shape, describeTensor(proto)));
  if (raw) {
    KILN_RETURN_IF_ERROR(fillFromRaw(proto.raw_data(), proto, &t));
  } else {
    KILN_RETURN_IF_ERROR(fillFromTypedFields(proto, &t));
  }
  return t;
}

void tensorToProto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.type()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  if (tensor.type() == DataType::kString) {
    for (const std::string& s : tensor.strings()) proto->add_string_data(s);
  } else if (const int bits = packedElementBits(tensor.type())) {
    const int perByte = 8 / bits;
    const int mask = (1 << bits) - 1;
    std::string packed(packedByteCount(tensor.type(), tensor.numel()), '\0');
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      const int v = (tensor.data<uint8_t>()[i] & mask) << ((i % perByte) * bits);
      packed[i / perByte] = static_cast<char>(packed[i / perByte] | v);
    }
    proto->set_raw_data(packed);
  } else {
    proto->set_raw_data(std::string(static_cast<const char*>(tensor.rawData()), tensor.byteSize()));
  }
}

}  // namespace kiln::onnx_import
