// Fuzz target: the tensor readers users feed inputs through, readNpyFile (.npy) and
// readTensorProtoFile (.pb, an ONNX TensorProto). The first byte picks the reader
// (even: .npy, odd: .pb); the rest is the file. Both take a path, so the bytes go
// through a scratch file, as the CLI's --inputs would read them.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "kiln/onnx_import.h"
#include "kiln/tensor_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool npy = data[0] % 2 == 0;
  const std::string path = kiln::fuzz::writeScratchFile(data + 1, size - 1, npy ? ".npy" : ".pb");
  std::string name;
  auto tensor = npy ? kiln::readNpyFile(path) : kiln::readTensorProtoFile(path, &name);
  if (tensor.isOk()) kiln::fuzz::touchTensor(tensor.value());
  return 0;
}
