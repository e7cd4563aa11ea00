// Structure-aware mutations of Kiln plan files for fuzz_plan_load (libFuzzer's custom
// mutator). Byte mutations of a plan mostly break its metadata JSON or its model's
// protobuf, so the loader's field checks were rarely reached. This mutator parses the
// plan's header and sections and changes one section meaningfully: a value of the
// metadata JSON (a number to a boundary value, a string to another or a long one, a
// bool to a number, an array element removed or duplicated, a member removed or its
// type changed), the model (onnx_mutator.h), or the bytes of the weights or the
// generated kernels; then it lays the sections out again (aligned) and writes a header
// whose offsets and checksum are right, as a hostile plan's author would. Input that
// is not a plan gets libFuzzer's byte mutations.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

// As LLVMFuzzerCustomMutator: mutates data[0, size) in place (at most maxSize bytes)
// with the randomness of `seed`; returns the new size.
size_t mutatePlan(uint8_t* data, size_t size, size_t maxSize, unsigned int seed);

}  // namespace kiln::fuzz
