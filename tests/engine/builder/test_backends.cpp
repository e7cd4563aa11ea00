// The backend registry (kiln/backends.h): the backends of this build by name, each
// with its probe, build backend and plan runner; an unknown or absent backend is one
// line naming it.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/backends.h"
#include "kiln/builder.h"
#include "kiln/cuda_runtime.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

TEST(Backends, ListsCpuFirstAndCudaExactlyWhenBuiltWithIt) {
  const std::vector<Backend>& table = backends();
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(table[0].name, "cpu");
  EXPECT_EQ(table.size(), cuda::builtWithCuda() ? 2u : 1u);
  EXPECT_EQ(backendNames(), cuda::builtWithCuda() ? "cpu, cuda" : "cpu");
  for (const Backend& b : table) {
    EXPECT_FALSE(b.summary.empty()) << b.name;
    EXPECT_TRUE(b.probe && b.createBuildBackend && b.createRunner) << b.name;
    auto found = findBackend(b.name);
    ASSERT_TRUE(found.isOk()) << b.name;
    EXPECT_EQ(found.value(), &b);
  }
  EXPECT_TRUE(table[0].probe(0).available);
  EXPECT_FALSE(table[0].probe(1).available);
}

TEST(Backends, RefusesAnUnknownBackendInOneLine) {
  auto found = findBackend("tpu");
  ASSERT_FALSE(found.isOk());
  EXPECT_EQ(found.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(found.status().message(),
            "unknown backend 'tpu' (this build has: " + backendNames() + ")");
  EXPECT_FALSE(createBuildBackend("", 0, BuilderConfig{}).isOk());
}

TEST(Backends, ABuildWithoutCudaListsCpuOnlyAndNamesCuda) {
  std::vector<Backend> cpuOnly = {backends()[0]};
  auto found = findBackendIn(cpuOnly, "cuda");
  ASSERT_FALSE(found.isOk());
  EXPECT_EQ(found.status().code(), StatusCode::kUnsupported);
  const std::string& message = found.status().message();
  EXPECT_EQ(message,
            "backend 'cuda' is not in this build (Kiln was built without the CUDA toolkit; it "
            "has: cpu)");
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_TRUE(findBackendIn(cpuOnly, "cpu").isOk());
}

// x [2, 3] -> Relu -> y, built on the CPU backend and run through the registry's runner.
TEST(Backends, CpuRowBuildsAndRunsAPlan) {
  auto network = std::make_shared<Network>();
  network->opsets[""] = 17;
  network->graph.inputs = {ValueInfo{"x", DataType::kFloat32, true, {2, 3}}};
  network->graph.outputs = {ValueInfo{"y", DataType::kFloat32, false, {}}};
  network->graph.nodes.push_back(test::makeNode("Relu", {"x"}, {"y"}));
  auto backend = createBuildBackend("cpu", 0, BuilderConfig{});
  ASSERT_TRUE(backend.isOk()) << backend.status().message();
  auto plan = buildPlan(network, BuilderConfig{}, **backend);
  ASSERT_TRUE(plan.isOk()) << plan.status().message();
  auto runner = findBackend("cpu").value()->createRunner(
      std::make_shared<const Plan>(std::move(plan.value())), 0);
  ASSERT_TRUE(runner.isOk()) << runner.status().message();
  const std::vector<float> in = {-1.f, 2.f, -3.f, 4.f, 0.5f, -0.5f};
  std::vector<NamedTensor> outputs = {{"poison", Tensor::scalarFloat(42.f)}};
  ASSERT_TRUE(
      (*runner)->run({{"x", Tensor::fromVector(DataType::kFloat32, {2, 3}, in)}}, &outputs).isOk());
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].name, "y");
  const float* y = outputs[0].tensor.data<float>();
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(y[i], std::max(in[i], 0.f)) << i;
}

}  // namespace
}  // namespace kiln
