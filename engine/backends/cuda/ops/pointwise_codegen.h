// CUDA C source for an ai.kiln PointwiseChain program (ir/pointwise_program.h),
// specialized for its storage types and for how each input is read. The source is
// self-contained (no headers: 16-bit conversions are written out), so NVRTC needs no
// include path, and deterministic: the same program, types and access give the same
// text, which is also the kernel cache's key. Host-only; no CUDA calls here.
//
// The source defines two extern "C" kernels taking one PointwiseArgs by value:
//   kiln_pointwise_chain       one element per thread (grid-stride), any access
//   kiln_pointwise_chain_vec   one pack of vectorWidth elements per thread, emitted
//                              when every input is full-shape or one element, or
//                              when the broadcast inputs' packs stay whole (see
//                              stridedPacks); the caller launches it when n % width
//                              == 0 and every pointer read in packs and the output
//                              are pack-aligned
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

// The dims the kernels index by are the output's after collapsing (pointwise_access.h):
// dims of 1 dropped, and neighbours merged where every broadcast input reads them as
// one dim (both broadcast, or contiguous across the pair). A channel vector [C] over
// [N, H, W, C] becomes [N*H*W, C] with strides [0, 1]: one division per element.

struct PointwiseKernelSpec {
  std::vector<DataType> inputTypes;  // storage types
  std::vector<InputAccess> access;
  DataType outputType = DataType::kFloat32;  // storage type
  int rank = 0;                              // output rank (used by strided inputs)
  bool index32 = false;  // every element index fits 32 bits: strided offsets use 32-bit division
  // Per input (kStrided ones only; others false): its innermost collapsed stride is 1,
  // so a pack of consecutive outputs reads a pack of consecutive elements; false: it is
  // 0 (the input broadcasts along the innermost dim), so the pack reads one element.
  std::vector<bool> innerContiguous;
  // The vectorized kernel takes strided inputs: packWidth() divides the innermost
  // collapsed dim, so no pack straddles two rows and each strided input's pack is
  // aligned like the output's.
  bool stridedPacks = false;

  // 16 bytes of the widest type read or written in packs (4 for float32, 8 when every
  // such value is 16-bit).
  int packWidth() const;
  // Elements per thread of the vectorized kernel: packWidth(), or 0 when some input is
  // strided and stridedPacks is false (no vectorized kernel).
  int vectorWidth() const;
};

// The CUDA C source for `program`, whose step types must already be storage types
// (a Cast step rounds to its step type). Call with a spec that matches the program's
// input count and at most kPointwiseMaxInputs inputs and kPointwiseMaxRank dims.
std::string generatePointwiseSource(const PointwiseProgram& program,
                                    const PointwiseKernelSpec& spec);

}  // namespace kiln::cuda
