#include "fuzz_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "kiln/tensor.h"
#include "kiln/tensor_size.h"

namespace kiln::fuzz {

void initFuzzProcess() {
  TensorLimits limits = tensorLimits();
  limits.maxBytes = kFuzzMaxTensorBytes;
  setTensorLimits(limits);
}

void touchTensor(const Tensor& tensor) {
  if (!tensor.defined()) return;
  volatile unsigned sum = 0;
  if (tensor.type() == DataType::kString) {
    for (const std::string& s : tensor.strings())
      for (char c : s) sum = sum + static_cast<unsigned char>(c);
    return;
  }
  const auto* bytes = static_cast<const unsigned char*>(tensor.rawData());
  for (size_t i = 0; bytes && i < tensor.byteSize(); ++i) sum = sum + bytes[i];
}

bool addRandomInput(const ValueInfo& input, const Shape& shape,
                    std::map<std::string, Tensor>* inputs) {
  // The declared type as it is (the builder's timing inputs pass it so; kiln run maps
  // an open type to float32 first): randomInput must refuse what it cannot make.
  auto bytes = checkedByteSize(input.type, shape, input.name);
  if (!bytes.isOk()) return false;
  // checkedByteSize counts no payload for strings (0 bytes): the gate counts each element
  // as its std::string, or 1.4M random strings passed as "small" and a sorted Unique of
  // them ran past 10 s (a slow unit of fuzz_onnx_import).
  int64_t gateBytes = bytes.value();
  if (input.type == DataType::kString) {
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;  // checked by checkedByteSize above
    gateBytes = numel * static_cast<int64_t>(sizeof(std::string));
  }
  if (gateBytes > kMaxRunInputBytes) return false;
  auto tensor = randomInput(input.type, shape, /*seed=*/7, input.name);
  if (!tensor.isOk()) return false;
  (*inputs)[input.name] = std::move(tensor.value());
  return true;
}

void runReference(const Network& network, const std::map<std::string, Tensor>& inputs,
                  const ReferenceRunOptions& options) {
  ReferenceBackend backend(network);
  std::vector<NamedTensor> outputs;
  if (!backend.run(inputs, &outputs, options).isOk()) return;
  for (const NamedTensor& output : outputs) touchTensor(output.tensor);
}

namespace {
std::filesystem::path& scratchDir() {
  static std::filesystem::path dir;
  return dir;
}
void removeScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(scratchDir(), ignored);
}
}  // namespace

std::string writeScratchFile(const uint8_t* data, size_t size, const std::string& suffix) {
  // One folder per process: libFuzzer's -jobs / -fork workers must not share files.
  std::filesystem::path& dir = scratchDir();
  if (dir.empty()) {
    dir = std::filesystem::temp_directory_path() / ("kiln-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::atexit(removeScratchDir);
  }
  const std::string path = (dir / ("input" + suffix)).string();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace kiln::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kiln::fuzz::initFuzzProcess();
  return 0;
}
