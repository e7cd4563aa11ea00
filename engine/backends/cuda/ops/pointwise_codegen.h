// CUDA C source for an ai.kiln PointwiseChain program (ir/pointwise_program.h),
// specialized for its storage types and for how each input is read. The source is
// self-contained (no headers: 16-bit conversions are written out), so NVRTC needs no
// include path, and deterministic: the same program, types and access give the same
// text, which is also the kernel cache's key. Host-only; no CUDA calls here.
//
// The source defines two extern "C" kernels taking one PointwiseArgs by value:
//   kiln_pointwise_chain       one element per thread (grid-stride), any access
//   kiln_pointwise_chain_vec   one pack of vectorWidth elements per thread, emitted
//                              only when every input is full-shape or one element;
//                              the caller launches it when n % width == 0 and every
//                              full-shape pointer and the output are pack-aligned
#pragma once

#include <string>
#include <vector>

#include "ir/pointwise_program.h"

namespace kiln::cuda {

constexpr int kPointwiseMaxInputs = 16;
constexpr int kPointwiseMaxRank = 8;
constexpr const char* kPointwiseKernelName = "kiln_pointwise_chain";
constexpr const char* kPointwiseVecKernelName = "kiln_pointwise_chain_vec";

// The kernels' one parameter; the generated source declares the same layout.
struct PointwiseArgs {
  const void* in[kPointwiseMaxInputs];
  void* out;
  long long n;                                                // output elements
  long long dims[kPointwiseMaxRank];                          // output dims, outermost first
  long long strides[kPointwiseMaxInputs][kPointwiseMaxRank];  // strided inputs' element strides
};

// How the kernel reads input k at output element i.
enum class InputAccess {
  kFull,     // the output's element count: element i
  kScalar,   // one element: element 0
  kStrided,  // broadcast: the offset of i's multi-index through strides[k]
};

struct PointwiseKernelSpec {
  std::vector<DataType> inputTypes;  // storage types
  std::vector<InputAccess> access;
  DataType outputType = DataType::kFloat32;  // storage type
  int rank = 0;                              // output rank (used by strided inputs)
  bool index32 = false;  // every element index fits 32 bits: strided offsets use 32-bit division

  // Elements per thread of the vectorized kernel: 16 bytes of the widest full-shape
  // type (4 for float32, 8 when every full-shape value is 16-bit); 0 when some input
  // is strided (no vectorized kernel).
  int vectorWidth() const;
};

// The CUDA C source for `program`, whose step types must already be storage types
// (a Cast step rounds to its step type). Call with a spec that matches the program's
// input count and at most kPointwiseMaxInputs inputs and kPointwiseMaxRank dims.
std::string generatePointwiseSource(const PointwiseProgram& program,
                                    const PointwiseKernelSpec& spec);

}  // namespace kiln::cuda
