// OpTest: runs one ONNX node on the CPU reference kernels, for op unit tests.
//   auto out = OpTest("Gemm", 13).attr("transB", 1).input(a).input(b).run();
//   ASSERT_TRUE(out.isOk()) << out.status().toString();
//   expectTensorNear(out.value()[0], expected, 1e-5, 1e-5);
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/kernel.h"
#include "kiln/graph.h"
#include "kiln/tensor.h"

namespace kiln::test {

class OpTest {
 public:
  explicit OpTest(const std::string& opType, int opset = 17, const std::string& domain = "");
  OpTest& attr(const std::string& name, int64_t value);
  OpTest& attr(const std::string& name, float value);
  OpTest& attr(const std::string& name, const std::string& value);
  OpTest& attr(const std::string& name, const std::vector<int64_t>& values);
  OpTest& attr(const std::string& name, const std::vector<float>& values);
  OpTest& input(const Tensor& tensor);
  OpTest& missingInput();  // an omitted optional input
  // Runs the kernel; outputCount outputs are requested.
  Result<std::vector<Tensor>> run(int outputCount = 1);
  Node& node() { return m_node; }

 private:
  Node m_node;
  std::vector<Tensor> m_inputs;
};

// Uniform random values in [lo, hi) from `seed` (integers are rounded; bool is v>0.5).
Tensor randomTensor(DataType type, const Shape& shape, uint32_t seed, double lo = -1.0,
                    double hi = 1.0);
// Float32 tensor from values.
Tensor floatTensor(const Shape& shape, const std::vector<float>& values);
Tensor int64Tensor(const Shape& shape, const std::vector<int64_t>& values);
Tensor stringTensor(const Shape& shape, const std::vector<std::string>& values);
// Asserts same dtype and shape, and |a - e| <= atol + rtol * |e| elementwise (NaN == NaN).
void expectTensorNear(const Tensor& actual, const Tensor& expected, double atol, double rtol);

}  // namespace kiln::test
