// Fuzz target: the ONNX importer (importOnnxBytes), then shape inference and, when
// every input is small, a CPU reference run with seeded random inputs.
//
// Byte-level damage mostly stops at the protobuf parser, so the mutator is
// structure-aware (onnx_mutator.h): it parses the ModelProto, changes one to three
// meaningful values and serializes it again; inputs that do not parse, and one
// mutation in four, get libFuzzer's byte mutations instead.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "fuzz_support.h"
#include "onnx_mutator.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "kiln/tensor_size.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

using kiln::fuzz::Rng;

// What a symbolic input dim is bound to for the run.
constexpr int64_t kSymbolicDimValue = 2;

// Random inputs for every graph input, symbolic dims bound to kSymbolicDimValue;
// false when one is too large to be worth running.
bool makeInputs(const kiln::Network& network, std::map<std::string, kiln::Tensor>* inputs) {
  for (const kiln::ValueInfo& input : network.graph.inputs) {
    if (!input.hasShape) return false;
    kiln::Shape shape;
    for (const kiln::DimExpr& dim : input.shape)
      shape.push_back(dim.isConst() ? dim.constValue() : kSymbolicDimValue);
    if (!kiln::fuzz::addRandomInput(input, shape, inputs)) return false;
  }
  return true;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (rng() % 4 == 0 || !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  const int changes = 1 + static_cast<int>(rng() % 3);
  bool changed = false;
  for (int i = 0; i < changes; ++i) changed |= kiln::fuzz::mutateOnnxModel(&model, rng);
  std::string bytes;
  if (!changed || !model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::copy(bytes.begin(), bytes.end(), data);
  return bytes.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  // No model folder: external data is refused, never read from the fuzzer's disk.
  auto network = kiln::importOnnxBytes(bytes, "", "fuzz.onnx");
  if (!network.isOk()) return 0;
  auto shapes = kiln::inferShapes(network.value());
  if (!shapes.isOk()) return 0;
  std::map<std::string, kiln::Tensor> inputs;
  if (!makeInputs(network.value(), &inputs)) return 0;
  kiln::fuzz::runReference(network.value(), inputs);
  return 0;
}
