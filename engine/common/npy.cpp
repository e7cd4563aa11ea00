#include <cstring>
#include <fstream>
#include <sstream>

#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/tensor_io.h"
#include "kiln/tensor_size.h"

namespace kiln {
namespace {

bool descrToType(const std::string& descr, DataType* type) {
  static const std::pair<const char*, DataType> kTable[] = {
      {"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64}, {"<f2", DataType::kFloat16},
      {"|i1", DataType::kInt8},    {"|u1", DataType::kUInt8},   {"<i2", DataType::kInt16},
      {"<u2", DataType::kUInt16},  {"<i4", DataType::kInt32},   {"<u4", DataType::kUInt32},
      {"<i8", DataType::kInt64},   {"<u8", DataType::kUInt64},  {"|b1", DataType::kBool}};
  for (const auto& [d, t] : kTable) {
    if (descr == d) {
      *type = t;
      return true;
    }
  }
  return false;
}

const char* typeToDescr(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kFloat64:
      return "<f8";
    case DataType::kFloat16:
      return "<f2";
    case DataType::kInt8:
      return "|i1";
    case DataType::kUInt8:
      return "|u1";
    case DataType::kInt16:
      return "<i2";
    case DataType::kUInt16:
      return "<u2";
    case DataType::kInt32:
      return "<i4";
    case DataType::kUInt32:
      return "<u4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kUInt64:
      return "<u8";
    case DataType::kBool:
      return "|b1";
    default:
      return nullptr;
  }
}

// Value of `key` in the header dict, e.g. 'descr': '<f4' -> <f4.
std::string headerField(const std::string& header, const std::string& key) {
  size_t pos = header.find("'" + key + "'");
  if (pos == std::string::npos) return "";
  pos = header.find(':', pos);
  if (pos == std::string::npos) return "";
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  if (pos >= header.size()) return "";
  if (header[pos] == '\'') {
    size_t end = header.find('\'', pos + 1);
    return end == std::string::npos ? "" : header.substr(pos + 1, end - pos - 1);
  }
  if (header[pos] == '(') {
    size_t end = header.find(')', pos);
    return end == std::string::npos ? "" : header.substr(pos + 1, end - pos - 1);
  }
  size_t end = header.find_first_of(",}", pos);
  return header.substr(pos, end - pos);
}

}  // namespace

Result<Tensor> readNpyFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(const std::string bytes, readRegularFile(path, kMaxTensorFileBytes));
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return parseError(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, offset;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return parseError(path + ": truncated .npy header");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    headerLen = len;
    offset = 12;
  }
  if (offset + headerLen > bytes.size()) return parseError(path + ": truncated .npy header");
  const std::string header = bytes.substr(offset, headerLen);
  DataType type;
  const std::string descr = headerField(header, "descr");
  if (!descrToType(descr, &type))
    return unsupported(path + ": .npy dtype '" + descr + "' is not supported");
  if (headerField(header, "fortran_order") != "False")
    return unsupported(path + ": Fortran-order .npy is not supported");
  Shape shape;
  std::stringstream dims(headerField(header, "shape"));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (...) {
      return parseError(path + ": bad shape in .npy header");
    }
    if (shape.back() < 0) return parseError(path + ": negative dimension in .npy header");
  }
  // Sized and checked against the data before anything is allocated: a header may
  // claim dims whose product wraps (3 x 6148914691236517206 is 2 elements unchecked).
  Result<int64_t> needed = checkedByteSize(type, shape, path + ": .npy shape");
  if (!needed.isOk()) return Status(StatusCode::kParseError, needed.status().message());
  const size_t dataOffset = offset + headerLen;
  if (bytes.size() - dataOffset != static_cast<size_t>(needed.value())) {
    return parseError(path + ": holds " + std::to_string(bytes.size() - dataOffset) +
                      " data bytes, shape " + shapeToString(shape) + " needs " +
                      std::to_string(needed.value()));
  }
  Tensor t(type, shape);
  if (t.byteSize()) std::memcpy(t.rawData(), bytes.data() + dataOffset, t.byteSize());
  return t;
}

Status writeNpyFile(const std::string& path, const Tensor& tensor) {
  const char* descr = typeToDescr(tensor.type());
  if (!descr)
    return unsupported(path + ": cannot write " + dataTypeName(tensor.type()) + " as .npy");
  std::string shape;
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  std::string header =
      "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream file(path, std::ios::binary);
  if (!file) return Status(StatusCode::kIoError, path + ": cannot write");
  const uint16_t len = static_cast<uint16_t>(header.size());
  file.write("\x93NUMPY\x01\x00", 8);
  file.put(static_cast<char>(len & 0xff));
  file.put(static_cast<char>(len >> 8));
  file << header;
  file.write(static_cast<const char*>(tensor.rawData()),
             static_cast<std::streamsize>(tensor.byteSize()));
  return file ? Status::ok() : Status(StatusCode::kIoError, path + ": write failed");
}

Result<Tensor> readTensorFile(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return readNpyFile(path);
  return readTensorProtoFile(path);
}

}  // namespace kiln
