// GpuOpTest: runs one ONNX node on the CUDA engine and on the CPU reference with
// the same random inputs, and compares the outputs at each engine precision.
//   GpuOpTest("Softmax", 13).attr("axis", 1).input(randomTensor(kFloat32, {4, 9}, 1))
//       .check({{Precision::kFloat32, 1e-5, 1e-5}, {Precision::kFloat16, 2e-3, 2e-3}});
// For a float16/bfloat16 precision the float32 inputs are first rounded to that type,
// so the reference sees exactly what the GPU sees. Every test calls
// KILN_REQUIRE_GPU() first: without a device it skips and says why.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_runtime.h"
#include "kiln/graph.h"
#include "kiln/tensor.h"
#include "support/op_test.h"

namespace kiln::test {

struct PrecisionTolerance {
  cuda::Precision precision = cuda::Precision::kFloat32;
  double atol = 1e-5;
  double rtol = 1e-5;
};

// The standard tolerances: fp32 1e-5/1e-5 (TF32 off), fp16 3e-3/3e-3, bf16 2e-2/2e-2.
std::vector<PrecisionTolerance> defaultTolerances();
std::vector<PrecisionTolerance> fp32Only(double atol = 1e-5, double rtol = 1e-5);
// Convolution layers (Conv, FusedConv, channels-last): fp32 1e-4 (summation order;
// cuDNN may pick Winograd or FFT engines), fp16 1e-2, bf16 6e-2 (the epilogue path
// rounds the convolution's output once more before bias, residual and activation).
std::vector<PrecisionTolerance> convTolerances();

// Float32 uniform random values in [lo, hi) from `seed` (randomTensor).
Tensor randomFloats(const Shape& shape, uint32_t seed, double lo = -1.0, double hi = 1.0);
// `t` as the GPU holds it at `precision`: float32 rounded to float16 or bfloat16 and
// back, so the reference sees exactly what the GPU sees; other tensors and fp32 as is.
Tensor roundTo(const Tensor& t, cuda::Precision precision);
std::map<std::string, Tensor> roundTo(const std::map<std::string, Tensor>& feeds,
                                      cuda::Precision precision);

class GpuOpTest {
 public:
  explicit GpuOpTest(const std::string& opType, int opset = 17, const std::string& domain = "");
  GpuOpTest& attr(const std::string& name, int64_t value);
  GpuOpTest& attr(const std::string& name, float value);
  GpuOpTest& attr(const std::string& name, const std::string& value);
  GpuOpTest& attr(const std::string& name, const std::vector<int64_t>& values);
  GpuOpTest& attr(const std::string& name, const std::vector<float>& values);
  GpuOpTest& attr(const std::string& name, const Tensor& value);
  // A graph input fed at run time.
  GpuOpTest& input(const Tensor& tensor);
  // An initializer (weights, shape tensors): uploaded once, known on the host.
  GpuOpTest& constant(const Tensor& tensor);
  GpuOpTest& missingInput();
  GpuOpTest& outputs(int count);
  // By default check() also asserts the node ran on the GPU (a host fallback would
  // match the reference and hide a missing kernel); tests of fallbacks turn it off.
  GpuOpTest& allowHostFallback();

  // The one-node network (inputs "in<i>", outputs "out<i>") and its run-time feeds,
  // for tests that run it themselves (runCudaPoisoned).
  Network network() const { return buildNetwork(m_inputs); }
  std::map<std::string, Tensor> feeds() const;

  // Runs CPU reference and CUDA at each precision; EXPECTs every output to match.
  void check(const std::vector<PrecisionTolerance>& tolerances = defaultTolerances());
  // Runs CUDA only, returning outputs (float32 at the boundary) for hand-made checks.
  Result<std::vector<Tensor>> runCuda(cuda::Precision precision = cuda::Precision::kFloat32);

 private:
  Network buildNetwork(const std::vector<Tensor>& inputs) const;
  Node m_node;
  std::vector<Tensor> m_inputs;
  std::vector<bool> m_isConstant;
  int m_outputs = 1;
  bool m_allowFallback = false;
};

// True when a CUDA device is usable; otherwise prints the reason once.
bool gpuAvailable();

// Runs `net` on the CUDA engine (TF32 off) with `feeds`, its output `output` bound to a
// device buffer poisoned first (NaN, 0xFF bytes, for float outputs; -128 for int8), so
// an element the kernels never write cannot pass; returns that output (cast to float32
// from its binding type) and, when asked, the layers. With `runAgain`
// the buffer is poisoned again after the first run and the network run once more:
// layers that time their candidate kernels in place on the first run (the
// channels-last INT8 convolution runs cuDNN on its output before racing Kiln's
// kernels) leave a correct answer there that would hide the elements the chosen
// kernel never writes. `layerChoices`: recorded choices by layer name, as an engine made
// from a plan gets them (EngineOptions::layerChoices). `code`: the compiled code to share
// with other runs given the same object (EngineOptions::compiledCode); nullptr: the
// engine's own, as in a new process.
Result<Tensor> runCudaPoisoned(const Network& net, const std::map<std::string, Tensor>& feeds,
                               cuda::Precision precision, const std::string& output,
                               std::vector<cuda::LayerInfo>* layers = nullptr,
                               bool runAgain = false,
                               const std::map<std::string, std::string>& layerChoices = {},
                               std::shared_ptr<cuda::CompiledCode> code = nullptr);

// The cuDNN engine configuration `code` holds for layer `layer` (the one its race found,
// in an engine given `code`), as the layer's recorded choice would name it
// ("cudnn engine=N ..."); "" with a test failure when it holds no single record for it.
std::string recordedCudnnChoice(const cuda::CompiledCode& code, const std::string& layer);

}  // namespace kiln::test

// Skips the test (loudly, with the reason) when no CUDA device is usable.
#define KILN_REQUIRE_GPU()                                                                   \
  do {                                                                                       \
    if (!::kiln::test::gpuAvailable())                                                       \
      GTEST_SKIP() << "SKIPPED: no CUDA device: " << ::kiln::cuda::probeCudaDevice().reason; \
  } while (0)
