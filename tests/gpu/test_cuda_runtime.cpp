// The CUDA runtime around the kernels: dynamic shapes, several contexts on several
// streams, bound device buffers, CUDA graphs, the per-layer profiler, host fallback
// and its report, and clean errors (wrong shapes, GPU out of memory) that leave the
// process usable without leaking device memory.
#include <cuda_runtime_api.h>

#include <map>

#include "gpu/gpu_op_test.h"
#include "kiln/reference_backend.h"
#include "kiln/tensor_size.h"

namespace kiln::test {
namespace {

Node makeNode(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
              int opset = 17) {
  Node n;
  n.opType = op;
  n.name = op + "_" + out[0];
  n.opset = opset;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

ValueInfo input(const std::string& name, std::vector<DimExpr> dims) {
  ValueInfo v;
  v.name = name;
  v.type = DataType::kFloat32;
  v.hasShape = true;
  v.shape = std::move(dims);
  return v;
}

// x[batch, 4, 8, 8] -> Conv(6) -> Relu -> Flatten -> MatMul(w) -> Softmax -> y[batch, 10],
// plus Det (no GPU kernel: host fallback) of the Relu output's 6x6 planes when `withFallback`.
std::shared_ptr<Network> smallNetwork(bool withFallback) {
  auto net = std::make_shared<Network>();
  net->irVersion = 8;
  net->opsets[""] = 17;
  Graph& g = net->graph;
  g.inputs.push_back(input("x", {DimExpr::symbol("batch"), 4, 8, 8}));
  g.initializers["w_conv"] = randomTensor(DataType::kFloat32, {6, 4, 3, 3}, 100);
  g.initializers["b_conv"] = randomTensor(DataType::kFloat32, {6}, 101);
  g.initializers["w_fc"] = randomTensor(DataType::kFloat32, {6 * 6 * 6, 10}, 102);
  g.nodes.push_back(makeNode("Conv", {"x", "w_conv", "b_conv"}, {"c"}));
  g.nodes.push_back(makeNode("Relu", {"c"}, {"r"}));
  g.nodes.push_back(makeNode("Flatten", {"r"}, {"f"}));
  g.nodes.push_back(makeNode("MatMul", {"f", "w_fc"}, {"logits"}));
  g.nodes.push_back(makeNode("Softmax", {"logits"}, {"y"}));
  g.outputs.push_back(ValueInfo{"y", DataType::kFloat32, false, {}});
  if (withFallback) {
    g.nodes.push_back(makeNode("Det", {"r"}, {"det"}));
    g.outputs.push_back(ValueInfo{"det", DataType::kFloat32, false, {}});
  }
  return net;
}

std::map<std::string, Tensor> cpuRun(const Network& net, const Tensor& x) {
  ReferenceBackend backend(net);
  std::vector<NamedTensor> out;
  Status s = backend.run({{"x", x}}, &out);
  EXPECT_TRUE(s.isOk()) << s.toString();
  std::map<std::string, Tensor> result;
  for (auto& o : out) result[o.name] = o.tensor;
  return result;
}

std::unique_ptr<cuda::ExecutionContext> newContext(const std::shared_ptr<cuda::Engine>& engine) {
  auto ctx = engine->createContext();
  EXPECT_TRUE(ctx.isOk()) << ctx.status().toString();
  return ctx.isOk() ? std::move(ctx.value()) : nullptr;
}

std::shared_ptr<cuda::Engine> newEngine(std::shared_ptr<Network> net) {
  cuda::EngineOptions options;
  options.allowTf32 = false;
  auto engine = cuda::Engine::create(std::move(net), options);
  EXPECT_TRUE(engine.isOk()) << engine.status().toString();
  return engine.isOk() ? engine.value() : nullptr;
}

Tensor outputOf(cuda::ExecutionContext& ctx, const std::string& name) {
  auto out = ctx.getOutput(name);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value() : Tensor();
}

TEST(CudaRuntime, DynamicBatchReplansAndMatchesCpu) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  for (int64_t batch : {3, 1, 7}) {
    Tensor x = randomTensor(DataType::kFloat32, {batch, 4, 8, 8}, 200 + batch);
    ASSERT_TRUE(ctx->setInputShape("x", x.shape()).isOk());
    auto shape = ctx->outputShape("y");
    ASSERT_TRUE(shape.isOk()) << shape.status().toString();
    EXPECT_EQ(shape.value(), (Shape{batch, 10}));
    ASSERT_TRUE(ctx->setInput("x", x).isOk());
    Status s = ctx->execute();
    ASSERT_TRUE(s.isOk()) << s.toString();
    expectTensorNear(outputOf(*ctx, "y"), cpuRun(*net, x)["y"], 1e-5, 1e-4);
    EXPECT_GT(ctx->activationBytes(), 0);
    EXPECT_LE(ctx->activationBytes(), ctx->activationBytesWithoutReuse());
  }
  EXPECT_GT(engine->weightBytes(), 0);
}

TEST(CudaRuntime, WrongShapesAreClearErrors) {
  KILN_REQUIRE_GPU();
  auto engine = newEngine(smallNetwork(false));
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  ASSERT_TRUE(ctx->setInputShape("x", {2, 4, 9, 8}).isOk());
  Status s = ctx->execute();
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
  EXPECT_FALSE(ctx->setInputShape("nope", {1}).isOk());
  // Still usable afterwards.
  Tensor x = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 7);
  ASSERT_TRUE(ctx->setInput("x", x).isOk());
  EXPECT_TRUE(ctx->execute().isOk());
}

TEST(CudaRuntime, TwoContextsOnTwoStreamsAtOnce) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto a = newContext(engine);
  auto b = newContext(engine);
  cudaStream_t sa, sb;
  ASSERT_EQ(cudaStreamCreate(&sa), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&sb), cudaSuccess);
  Tensor xa = randomTensor(DataType::kFloat32, {5, 4, 8, 8}, 11);
  Tensor xb = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 12);
  ASSERT_TRUE(a->setInput("x", xa).isOk());
  ASSERT_TRUE(b->setInput("x", xb).isOk());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->enqueue(sa).isOk());
    ASSERT_TRUE(b->enqueue(sb).isOk());
  }
  auto ya = a->getOutput("y", sa);
  auto yb = b->getOutput("y", sb);
  ASSERT_TRUE(ya.isOk() && yb.isOk());
  expectTensorNear(ya.value(), cpuRun(*net, xa)["y"], 1e-5, 1e-4);
  expectTensorNear(yb.value(), cpuRun(*net, xb)["y"], 1e-5, 1e-4);
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
}

TEST(CudaRuntime, BoundDeviceBuffers) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  Tensor x = randomTensor(DataType::kFloat32, {4, 4, 8, 8}, 21);
  void *dx = nullptr, *dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, x.byteSize()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, 4 * 10 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.rawData(), x.byteSize(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy, 0xFF, 4 * 10 * sizeof(float)), cudaSuccess);  // poison (NaN)
  ASSERT_TRUE(ctx->setInputShape("x", x.shape()).isOk());
  ASSERT_TRUE(ctx->setTensorAddress("x", dx).isOk());
  ASSERT_TRUE(ctx->setTensorAddress("y", dy).isOk());
  ASSERT_TRUE(ctx->execute().isOk());
  Tensor y(DataType::kFloat32, {4, 10});
  ASSERT_EQ(cudaMemcpy(y.rawData(), dy, y.byteSize(), cudaMemcpyDeviceToHost), cudaSuccess);
  expectTensorNear(y, cpuRun(*net, x)["y"], 1e-5, 1e-4);
  cudaFree(dx);
  cudaFree(dy);
}

TEST(CudaRuntime, CudaGraphReplaysWithNewInputs) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  ASSERT_TRUE(ctx->setUseCudaGraph(true).isOk());
  for (uint32_t seed : {31u, 32u, 33u}) {
    Tensor x = randomTensor(DataType::kFloat32, {3, 4, 8, 8}, seed);
    ASSERT_TRUE(ctx->setInput("x", x).isOk());
    Status s = ctx->execute();
    ASSERT_TRUE(s.isOk()) << s.toString();
    expectTensorNear(outputOf(*ctx, "y"), cpuRun(*net, x)["y"], 1e-5, 1e-4);
  }
}

TEST(CudaRuntime, ProfilerRecordsEveryLayerEachRun) {
  KILN_REQUIRE_GPU();
  auto engine = newEngine(smallNetwork(false));
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  ASSERT_TRUE(ctx->setInput("x", randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 41)).isOk());
  ctx->setProfiling(true);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ctx->execute().isOk());
  auto timings = ctx->takeLayerTimings();
  ASSERT_EQ(timings.size(), 5u);  // Conv, Relu, Flatten (view), MatMul, Softmax
  for (const auto& t : timings) {
    ASSERT_EQ(t.milliseconds.size(), 3u) << t.name;
    for (float ms : t.milliseconds) EXPECT_GE(ms, 0.f);
  }
  EXPECT_TRUE(ctx->takeLayerTimings().front().milliseconds.empty());
}

// With a head start the GPU waits 20 ms before the first layer: the layers' events
// must hold their own work only (far under the wait), and the outputs stay right.
TEST(CudaRuntime, ProfilerHeadStartKeepsTheWaitOutOfLayerTimes) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  const Tensor x = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 42);
  ASSERT_TRUE(ctx->setInput("x", x).isOk());
  // One run first: kernels load on first use (lazy module loading), which the first
  // profiled run would time when this test runs alone (474 ms on an H200, 2026-11-29).
  ASSERT_TRUE(ctx->execute().isOk());
  ctx->setProfilingHeadStart(20.0);
  ctx->setProfiling(true);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ctx->execute().isOk());
  float total = 0;
  for (const auto& t : ctx->takeLayerTimings()) {
    ASSERT_EQ(t.milliseconds.size(), 2u) << t.name;
    for (float ms : t.milliseconds) {
      EXPECT_GE(ms, 0.f) << t.name;
      total += ms;
    }
  }
  EXPECT_LT(total, 10.f) << "the head start's wait leaked into the layer times";
  expectTensorNear(outputOf(*ctx, "y"), cpuRun(*net, x)["y"], 1e-4, 1e-4);
}

TEST(CudaRuntime, HostFallbackIsReportedAndCorrectButNotCapturable) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(true);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  auto ctx = newContext(engine);
  Tensor x = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 51);
  ASSERT_TRUE(ctx->setInput("x", x).isOk());
  ASSERT_TRUE(ctx->execute().isOk());
  auto expected = cpuRun(*net, x);
  expectTensorNear(outputOf(*ctx, "det"), expected["det"], 1e-4, 1e-3);
  bool found = false;
  for (const auto& layer : ctx->layers()) {
    if (layer.opType == "Det") {
      found = true;
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kHostFallback);
      EXPECT_FALSE(layer.note.empty());
    }
  }
  EXPECT_TRUE(found);
  ASSERT_TRUE(ctx->setUseCudaGraph(true).isOk());
  Status s = ctx->execute();
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("Det"), std::string::npos) << s.message();
}

TEST(CudaRuntime, OutOfMemoryIsAnErrorAndLeaksNothing) {
  KILN_REQUIRE_GPU();
  auto net = smallNetwork(false);
  auto engine = newEngine(net);
  ASSERT_TRUE(engine);
  {  // Process-wide state made on first use (library handles, loaded kernels) is not a
     // leak: one run before measuring, so the test also holds when run alone.
    auto warm = newContext(engine);
    ASSERT_TRUE(warm->setInput("x", randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 60)).isOk());
    ASSERT_TRUE(warm->execute().isOk());
  }
  size_t freeBefore = 0, total = 0;
  {
    auto ctx = newContext(engine);
    ASSERT_TRUE(ctx->execute().code() != StatusCode::kOk);  // no shape yet
    ASSERT_EQ(cudaMemGetInfo(&freeBefore, &total), cudaSuccess);
    // ~ total memory * 4 in activations: cannot fit. The host-side size cap (64 GiB or
    // half the RAM, kiln/tensor_size.h) would refuse the shape first: lifted here so the
    // GPU's own out-of-memory is what is tested.
    int64_t batch = static_cast<int64_t>(total / (4 * 8 * 8 * 4)) * 4;
    const TensorLimits saved = tensorLimits();
    TensorLimits lifted = saved;
    lifted.maxBytes = int64_t{1} << 44;
    setTensorLimits(lifted);
    ASSERT_TRUE(ctx->setInputShape("x", {batch, 4, 8, 8}).isOk());
    Status s = ctx->execute();
    setTensorLimits(saved);
    EXPECT_EQ(s.code(), StatusCode::kOutOfMemory) << s.toString();
    EXPECT_NE(s.message().find("out of memory"), std::string::npos) << s.message();
    // Under the cap the same shape is refused before any allocation, naming the input.
    ASSERT_TRUE(ctx->setInputShape("x", {batch, 4, 8, 8}).isOk());
    Status capped = ctx->execute();
    EXPECT_FALSE(capped.isOk());
    EXPECT_NE(capped.message().find("input 'x'"), std::string::npos) << capped.message();
    // The same context still runs a sane shape.
    Tensor x = randomTensor(DataType::kFloat32, {2, 4, 8, 8}, 61);
    ASSERT_TRUE(ctx->setInput("x", x).isOk());
    Status ok = ctx->execute();
    ASSERT_TRUE(ok.isOk()) << ok.toString();
    expectTensorNear(outputOf(*ctx, "y"), cpuRun(*net, x)["y"], 1e-5, 1e-4);
  }
  size_t freeAfter = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeAfter, &total), cudaSuccess);
  EXPECT_GE(freeAfter + (8 << 20), freeBefore) << "device memory leaked";
}

}  // namespace
}  // namespace kiln::test
