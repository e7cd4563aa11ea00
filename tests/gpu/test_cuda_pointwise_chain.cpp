// ai.kiln PointwiseChain on the CUDA engine. Graphs are built in code, fused by the
// level-2 pipeline into one PointwiseChain, run on the GPU into an output buffer
// poisoned with NaN before every run, and compared with the UNFUSED graph on the CPU
// reference fed the same (precision-rounded) inputs, at fp32, fp16 and bf16, through
// each path: the NVRTC-generated kernel (packs and strided), the unfused kernels, and
// the timed choice. The first tests need no device: every op's generated source
// compiles for sm_90, and a compile error is one line with NVRTC's first log line.
//
// Tolerances: fp32 1e-5 (the device's expf/tanhf/erff against the host's: a few ulp).
// fp16 4e-3 and bf16 3e-2: inputs are rounded first and the generated kernel computes
// in float, so only the output rounding remains (2^-11, 2^-8 relative). The unfused
// path rounds every intermediate to 16 bits as well: bf16 6e-2 for it.
//
// The last tests build a plan through the CUDA builder and check that its cubins
// are what the runtime loads: an engine made from the plan (its own CompiledCode, the
// plan's entries preloaded) makes no NVRTC compile at the opt shapes (nvrtcCompileCount)
// and says "from plan"; a shape whose source differs
// compiles and says "compiled in"; a warm timing cache still ships the cubin.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/ops/nvrtc_module.h"
#include "backends/cuda/ops/pointwise_access.h"
#include "backends/cuda/ops/pointwise_codegen.h"
#include "gpu/gpu_op_test.h"
#include "kiln/builder.h"
#include "kiln/cuda_build_backend.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/passes.h"
#include "kiln/plan.h"
#include "kiln/reference_backend.h"
#include "kiln/timing_cache.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

using Feeds = std::map<std::string, Tensor>;

// ---- Without a device: the generated source compiles ---------------------------

PointwiseProgram everyOp() {
  PointwiseProgram p;
  p.inputCount = 2;
  p.constants = {0.5f};
  auto step = [&](PointwiseOp op, std::vector<int> operands, DataType type = DataType::kFloat32) {
    PointwiseStep s;
    s.op = op;
    s.operands = std::move(operands);
    s.alpha = op == PointwiseOp::kClip ? -1.f : 0.2f;
    s.beta = op == PointwiseOp::kClip ? 1.f : 0.5f;
    s.type = type;
    p.steps.push_back(s);
    return p.stepValue(p.steps.size() - 1);
  };
  int v = step(PointwiseOp::kAdd, {0, 1});
  for (PointwiseOp op :
       {PointwiseOp::kRelu, PointwiseOp::kSigmoid, PointwiseOp::kTanh, PointwiseOp::kExp,
        PointwiseOp::kLog, PointwiseOp::kSqrt, PointwiseOp::kNeg, PointwiseOp::kAbs,
        PointwiseOp::kErf, PointwiseOp::kReciprocal, PointwiseOp::kGelu, PointwiseOp::kClip,
        PointwiseOp::kLeakyRelu, PointwiseOp::kHardSigmoid, PointwiseOp::kHardSwish,
        PointwiseOp::kSoftplus})
    v = step(op, {v});
  v = step(PointwiseOp::kCast, {v}, DataType::kFloat16);
  v = step(PointwiseOp::kCast, {v}, DataType::kBFloat16);
  for (PointwiseOp op : {PointwiseOp::kSub, PointwiseOp::kMul, PointwiseOp::kDiv, PointwiseOp::kPow,
                         PointwiseOp::kMax, PointwiseOp::kMin})
    v = step(op, {v, op == PointwiseOp::kPow ? 2 : 0}, DataType::kBFloat16);
  return p;
}

TEST(PointwiseCodegen, EveryOpCompilesForSm90InEveryAccessAndType) {
  const PointwiseProgram program = everyOp();
  cuda::PointwiseKernelSpec packed{{DataType::kFloat32, DataType::kFloat16},
                                   {cuda::InputAccess::kFull, cuda::InputAccess::kScalar},
                                   DataType::kBFloat16,
                                   3};
  cuda::PointwiseKernelSpec strided{{DataType::kBFloat16, DataType::kFloat16},
                                    {cuda::InputAccess::kFull, cuda::InputAccess::kStrided},
                                    DataType::kBFloat16,
                                    4,
                                    true};
  cuda::PointwiseKernelSpec strided64 = strided;  // over 2^32 elements: 64-bit offsets
  strided64.index32 = false;
  EXPECT_EQ(packed.vectorWidth(), 4);  // float32 input: 16 bytes are 4 elements
  EXPECT_EQ(strided.vectorWidth(), 0);
  for (const cuda::PointwiseKernelSpec& spec : {packed, strided, strided64}) {
    const std::string source = cuda::generatePointwiseSource(program, spec);
    EXPECT_EQ(source, cuda::generatePointwiseSource(program, spec));  // deterministic
    EXPECT_EQ(source.find(cuda::kPointwiseVecKernelName) != std::string::npos,
              spec.vectorWidth() > 0);
    auto cubin = cuda::compileCudaToCubin(source, "the test kernel", "sm_90");
    ASSERT_TRUE(cubin.isOk()) << cubin.status().toString() << "\n" << source;
    EXPECT_GT(cubin.value().size(), 1000u);
  }
}

// The access plan of `shapes` (fp16 storage, fp16 output) over their broadcast shape.
struct AccessPlan {
  cuda::PointwiseKernelSpec spec;
  cuda::PointwiseArgs args{};
};

AccessPlan planFp16(const std::vector<Shape>& shapes) {
  AccessPlan plan;
  plan.spec.outputType = DataType::kFloat16;
  const std::vector<DataType> types(shapes.size(), DataType::kFloat16);
  auto out = cuda::pointwiseOutputShape(shapes);
  EXPECT_TRUE(out.isOk());
  cuda::planPointwiseAccess(types, shapes, out.value(), &plan.spec, &plan.args);
  return plan;
}

TEST(PointwiseCodegen, BroadcastDimsCollapseAndChannelVectorsReadInPacks) {
  // A channel vector over NHWC (ConvNeXt's layer scale): [N*H*W, C], strides [0, 1].
  AccessPlan channel = planFp16({{2, 5, 6, 16}, {16}, {2, 5, 6, 16}});
  ASSERT_EQ(channel.spec.rank, 2);
  EXPECT_EQ(channel.args.dims[0], 60);
  EXPECT_EQ(channel.args.dims[1], 16);
  EXPECT_EQ(channel.args.strides[1][0], 0);
  EXPECT_EQ(channel.args.strides[1][1], 1);
  EXPECT_TRUE(channel.spec.innerContiguous[1]);
  EXPECT_FALSE(channel.spec.innerContiguous[0]);  // full-shape: read in packs as before
  EXPECT_EQ(channel.spec.vectorWidth(), 8);
  // Squeeze-excitation's per-image channel scale over NHWC: [N, H*W, C], strides [C, 0, 1].
  AccessPlan se = planFp16({{2, 5, 6, 16}, {2, 1, 1, 16}});
  ASSERT_EQ(se.spec.rank, 3);
  EXPECT_EQ(se.args.dims[1], 30);
  EXPECT_EQ(se.args.strides[1][0], 16);
  EXPECT_EQ(se.args.strides[1][1], 0);
  EXPECT_EQ(se.spec.vectorWidth(), 8);
  // A per-channel scale over NCHW broadcasts along the innermost dim: one element a pack
  // when the pack divides H*W (4 * 8), none when it does not (5 * 6).
  AccessPlan nchw = planFp16({{2, 16, 4, 8}, {16, 1, 1}});
  ASSERT_EQ(nchw.spec.rank, 3);
  EXPECT_EQ(nchw.args.dims[2], 32);
  EXPECT_FALSE(nchw.spec.innerContiguous[1]);
  EXPECT_EQ(nchw.spec.vectorWidth(), 8);
  EXPECT_EQ(planFp16({{2, 16, 5, 6}, {16, 1, 1}}).spec.vectorWidth(), 0);
  EXPECT_EQ(planFp16({{3, 7}, {7}}).spec.vectorWidth(), 0);  // rows of 7: packs would straddle
  // Dims of 1 drop out; a float32 input halves the pack.
  AccessPlan ones = planFp16({{1, 4, 1, 8}, {1, 1, 1, 8}});
  EXPECT_EQ(ones.spec.rank, 2);
  for (const AccessPlan* plan : {&channel, &se, &nchw}) {
    PointwiseProgram mul;
    mul.inputCount = static_cast<int>(plan->spec.access.size());
    PointwiseStep step;
    step.op = PointwiseOp::kMul;
    step.operands = {0, 1};
    step.type = DataType::kFloat16;
    mul.steps.push_back(step);
    const std::string source = cuda::generatePointwiseSource(mul, plan->spec);
    EXPECT_NE(source.find(cuda::kPointwiseVecKernelName), std::string::npos);
    auto cubin = cuda::compileCudaToCubin(source, "the test kernel", "sm_90");
    ASSERT_TRUE(cubin.isOk()) << cubin.status().toString() << "\n" << source;
  }
}

TEST(PointwiseCodegen, ACompileErrorIsOneLineWithTheFirstLogLine) {
  auto cubin = cuda::compileCudaToCubin("extern \"C\" __global__ void k() { undeclared(); }",
                                        "layer 'PWN(a, b)'", "sm_90");
  ASSERT_FALSE(cubin.isOk());
  const std::string message = cubin.status().message();
  EXPECT_NE(message.find("NVRTC could not compile layer 'PWN(a, b)' for sm_90: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("undeclared"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// ---- On the device --------------------------------------------------------------

struct Tolerance {
  cuda::Precision precision;
  double tolerance;
};

ValueInfo input(const std::string& name, const Shape& shape) {
  ValueInfo v{name, DataType::kFloat32, true, {}};
  for (int64_t d : shape) v.shape.push_back(DimExpr(d));
  return v;
}

// A float32 network of `nodes` over inputs `shapes` (named x, y, z, ...), output "out".
Network chainNetwork(const std::vector<Node>& nodes, const std::vector<Shape>& shapes) {
  Network net;
  net.opsets[""] = 20;
  const char* names[] = {"x", "y", "z", "w"};
  for (size_t i = 0; i < shapes.size(); ++i) net.graph.inputs.push_back(input(names[i], shapes[i]));
  net.graph.initializers["half"] = floatTensor({}, {0.5f});
  net.graph.initializers["one"] = floatTensor({}, {1.f});
  net.graph.initializers["cubic"] = floatTensor({}, {0.044715f});
  net.graph.initializers["root"] = floatTensor({}, {0.7978845608028654f});
  net.graph.nodes = nodes;
  for (Node& n : net.graph.nodes) n.opset = 20;
  net.graph.outputs = {{"out", DataType::kUndefined, false, {}}};
  return net;
}

Feeds chainFeeds(const Network& net, uint32_t seed) {
  Feeds feeds;
  for (const ValueInfo& in : net.graph.inputs) {
    Shape shape;
    for (const DimExpr& d : in.shape) shape.push_back(d.constValue());
    feeds[in.name] = randomFloats(shape, seed++, -2.0, 2.0);
  }
  return feeds;
}

// Fuses `unfused` (level 2, `disabled` passes off) into one PointwiseChain of `ops`
// steps with path `path`, runs it on the GPU at each precision against the unfused
// graph on the CPU; the layer's implementation text must contain `implementation`.
void checkChain(const Network& unfused, size_t ops, const std::string& path,
                const std::string& implementation, std::vector<std::string> disabled = {}) {
  Network fused = unfused;
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 2, disabled, &applied).isOk());
  ASSERT_EQ(fused.graph.nodes.size(), 1u) << "the pass did not fuse the whole graph";
  Node& chain = fused.graph.nodes[0];
  ASSERT_EQ(chain.opType, kPointwiseChainOp);
  ASSERT_EQ(chain.attrStrings("ops").size(), ops);
  chain.attributes["path"].kind = Attribute::Kind::kString;
  chain.attributes["path"].s = path;
  const Feeds base = chainFeeds(unfused, 11);
  const double bf16 = path == "unfused" ? 6e-2 : 3e-2;
  for (const Tolerance& t :
       {Tolerance{cuda::Precision::kFloat32, 1e-5}, Tolerance{cuda::Precision::kFloat16, 4e-3},
        Tolerance{cuda::Precision::kBFloat16, bf16}}) {
    SCOPED_TRACE(std::string("precision ") + cuda::precisionName(t.precision) + ", path " + path);
    const Feeds feeds = roundTo(base, t.precision);
    std::vector<NamedTensor> expected;
    Status ran = ReferenceBackend(unfused).run(feeds, &expected);
    ASSERT_TRUE(ran.isOk()) << ran.toString();
    std::vector<cuda::LayerInfo> layers;
    auto actual = runCudaPoisoned(fused, feeds, t.precision, "out", &layers);
    ASSERT_TRUE(actual.isOk()) << actual.status().toString();
    int chains = 0;
    for (const cuda::LayerInfo& layer : layers) {
      if (layer.opType != kPointwiseChainOp) continue;
      ++chains;
      EXPECT_EQ(layer.placement, cuda::LayerPlacement::kGpu) << layer.name << ": " << layer.note;
      EXPECT_NE(layer.implementation.find(implementation), std::string::npos)
          << layer.implementation;
    }
    EXPECT_EQ(chains, 1);
    expectTensorNear(actual.value(), expected[0].tensor, t.tolerance, t.tolerance);
  }
}

// GELU (tanh form) of x + bias, written out as exporters do: 0.5 a (1 + tanh(c (a + k a^3))).
Network biasGeluTanh(const Shape& x, const Shape& bias) {
  return chainNetwork(
      {makeNode("Add", {"x", "y"}, {"a"}), makeNode("Mul", {"a", "a"}, {"a2"}),
       makeNode("Mul", {"a2", "a"}, {"a3"}), makeNode("Mul", {"a3", "cubic"}, {"k"}),
       makeNode("Add", {"a", "k"}, {"s"}), makeNode("Mul", {"s", "root"}, {"r"}),
       makeNode("Tanh", {"r"}, {"t"}), makeNode("Add", {"t", "one"}, {"e"}),
       makeNode("Mul", {"a", "half"}, {"h"}), makeNode("Mul", {"h", "e"}, {"out"})},
      {x, bias});
}

TEST(CudaPointwiseChain, GeluTanhChainWithABiasAlongTheLastDim) {
  KILN_REQUIRE_GPU();
  // fuse_gelu off, so the ten ops arrive as they were written; the bias is strided.
  const Network net = biasGeluTanh({4, 37, 96}, {96});
  for (const char* path : {"generated", "unfused"})
    checkChain(net, 10, path,
               path == std::string("generated") ? "kiln nvrtc pointwise sm_" : "unfused: 10",
               {"fuse_gelu"});
  checkChain(net, 10, "auto", "timed {generated=", {"fuse_gelu"});
  // With fuse_gelu on, the chain is Add + Gelu(tanh).
  checkChain(net, 2, "auto", "timed {generated=");
}

// Tactics as data (issue 23): the race of the generated kernel against the unfused kernels
// is the layer's choice; an engine given it (as one made from a plan is) runs it without
// timing and computes the same; a choice that is neither is said and timed again.
TEST(CudaPointwiseChain, PlannedChoiceRunsWithoutTiming) {
  KILN_REQUIRE_GPU();
  Network fused = biasGeluTanh({4, 37, 96}, {96});
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(fused, 2, {"fuse_gelu"}, &applied).isOk());  // the ten ops, one chain
  ASSERT_EQ(fused.graph.nodes.size(), 1u);
  ASSERT_EQ(fused.graph.nodes[0].opType, kPointwiseChainOp);
  const Feeds feeds =
      roundTo(chainFeeds(biasGeluTanh({4, 37, 96}, {96}), 11), cuda::Precision::kFloat16);
  std::vector<cuda::LayerInfo> layers;
  auto first = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "out", &layers);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_EQ(layers.size(), 1u);
  const cuda::LayerInfo raced = layers[0];
  EXPECT_NE(raced.implementation.find("timed {generated="), std::string::npos)
      << raced.implementation;
  ASSERT_TRUE(raced.choice == "generated" || raced.choice == "unfused") << raced.choice;
  for (const char* choice : {"generated", "unfused"}) {
    SCOPED_TRACE(choice);
    auto out = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "out", &layers, false,
                               {{raced.name, choice}});
    ASSERT_TRUE(out.isOk()) << out.status().toString();
    const std::string& text = layers[0].implementation;
    EXPECT_NE(text.find(std::string("(the plan's choice: ") + choice + ")"), std::string::npos)
        << text;
    EXPECT_EQ(text.find("timed"), std::string::npos) << text;
    EXPECT_EQ(layers[0].choice, choice);
    expectTensorNear(out.value(), first.value(), 4e-3, 4e-3);
  }
  auto refused = runCudaPoisoned(fused, feeds, cuda::Precision::kFloat16, "out", &layers, false,
                                 {{raced.name, "fused_graph engine=1 knobs="}});
  ASSERT_TRUE(refused.isOk()) << refused.status().toString();
  EXPECT_NE(layers[0].implementation.find(
                "; the plan's choice 'fused_graph engine=1 knobs=' does not apply here: timed "
                "again"),
            std::string::npos)
      << layers[0].implementation;
  EXPECT_NE(layers[0].implementation.find("timed {generated="), std::string::npos);
}

TEST(CudaPointwiseChain, FullShapeInputsRunInPacksAndOddSizesElementwise) {
  KILN_REQUIRE_GPU();
  // swish(x) * y + z: every input full-shape; 4 * 1000 divides into packs, 3 * 7 * 11 not.
  for (const Shape& shape : {Shape{4, 1000}, Shape{3, 7, 11}}) {
    SCOPED_TRACE(shapeToString(shape));
    const Network net =
        chainNetwork({makeNode("Sigmoid", {"x"}, {"s"}), makeNode("Mul", {"x", "s"}, {"sw"}),
                      makeNode("Mul", {"sw", "y"}, {"m"}), makeNode("Add", {"m", "z"}, {"out"})},
                     {shape, shape, shape});
    checkChain(net, 4, "generated", "packs of ");
    checkChain(net, 4, "auto", "unfused 4 kernels=");
  }
}

TEST(CudaPointwiseChain, BroadcastsEveryWay) {
  KILN_REQUIRE_GPU();
  // [2, 3, 5, 7] with [3, 1, 7], [2, 1, 5, 1] and a one-element [1, 1]: strided and scalar.
  const Node clip = makeNode("Clip", {"c"}, {"out"});
  const Network net = chainNetwork(
      {makeNode("Add", {"x", "y"}, {"a"}), makeNode("Mul", {"a", "z"}, {"m"}),
       makeNode("Max", {"m", "w"}, {"mx"}), makeNode("Div", {"mx", "half"}, {"d"}),
       makeNode("HardSwish", {"d"}, {"c"}), withFloat(withFloat(clip, "min", -0.5f), "max", 1.5f)},
      {{2, 3, 5, 7}, {3, 1, 7}, {2, 1, 5, 1}, {1, 1}});
  Network opset6 = net;
  opset6.graph.nodes.back().opset = 6;  // Clip with attribute bounds
  checkChain(opset6, 6, "generated", "strided");
  checkChain(opset6, 6, "unfused", "unfused: 6");
}

TEST(CudaPointwiseChain, ChannelBroadcastsRunInPacks) {
  KILN_REQUIRE_GPU();
  // ConvNeXt's layer scale and residual over NHWC, squeeze-excitation's per-image scale,
  // and a per-channel scale over NCHW whose plane the pack divides.
  const Network layerScale =
      chainNetwork({makeNode("Mul", {"x", "y"}, {"m"}), makeNode("Add", {"m", "z"}, {"out"})},
                   {{2, 5, 6, 16}, {16}, {2, 5, 6, 16}});
  checkChain(layerScale, 2, "generated", "packs of ");
  const Network squeeze =
      chainNetwork({makeNode("Mul", {"x", "y"}, {"m"}), makeNode("Relu", {"m"}, {"out"})},
                   {{2, 5, 6, 16}, {2, 1, 1, 16}});
  checkChain(squeeze, 2, "generated", "packs of ");
  const Network channelsFirst =
      chainNetwork({makeNode("Mul", {"x", "y"}, {"m"}), makeNode("Add", {"m", "z"}, {"out"})},
                   {{2, 16, 4, 8}, {16, 1, 1}, {1, 16, 1, 1}});
  checkChain(channelsFirst, 2, "generated", "packs of ");
}

TEST(CudaPointwiseChain, CastsRoundAtTheirStep) {
  KILN_REQUIRE_GPU();
  // exp(x) to float16, LeakyRelu, back to float32, minus y: rounded where the graph says.
  const Network net = chainNetwork(
      {makeNode("Exp", {"x"}, {"e"}), withInt(makeNode("Cast", {"e"}, {"h"}), "to", 10),
       withFloat(makeNode("LeakyRelu", {"h"}, {"l"}), "alpha", 0.1f),
       withInt(makeNode("Cast", {"l"}, {"f"}), "to", 1), makeNode("Sub", {"f", "y"}, {"out"})},
      {{8, 33}, {8, 33}});
  checkChain(net, 5, "generated", "kiln nvrtc pointwise");
  checkChain(net, 5, "unfused", "unfused: 5");
}

// ---- Cubins in the plan -----------------------------------------------------------

// (x + y) * sigmoid(x + y) with x [N, 96] and the bias y [96]: at N > 1 the bias is
// strided, at N = 1 every input is full-shape, so the generated source differs.
Network biasSwish() {
  Network net = chainNetwork({makeNode("Add", {"x", "y"}, {"a"}), makeNode("Sigmoid", {"a"}, {"s"}),
                              makeNode("Mul", {"a", "s"}, {"out"})},
                             {{4, 96}, {96}});
  net.graph.inputs[0].shape = {DimExpr::symbol("N"), DimExpr(96)};
  return net;
}

BuilderConfig swishConfig(bool fp16, TimingCache* cache = nullptr) {
  BuilderConfig config;
  config.fp16 = fp16;
  config.tf32 = false;
  config.optimizationLevel = 2;
  config.timingCache = cache;
  OptimizationProfile profile;
  profile.inputs["x"] = {{1, 96}, {4, 96}, {8, 96}};
  config.profiles = {profile};
  return config;
}

Result<Plan> buildSwishPlan(const BuilderConfig& config) {
  KILN_ASSIGN_OR_RETURN(auto backend, cuda::createCudaBuildBackend(0, config));
  return buildPlan(std::make_shared<Network>(biasSwish()), config, *backend);
}

// The engine precision `kiln run` gives a CUDA plan: that of its 16-bit layers.
cuda::Precision planPrecision(const Plan& plan) {
  cuda::Precision precision = cuda::Precision::kFloat32;
  for (const LayerImplementation& l : plan.layers) {
    if (l.precision == DataType::kFloat16) precision = cuda::Precision::kFloat16;
    if (l.precision == DataType::kBFloat16) precision = cuda::Precision::kBFloat16;
  }
  return precision;
}

// Runs the plan's network at batch `n` against the unfused graph on the CPU and
// returns the chain's implementation text.
std::string runSwishPlan(const Plan& plan, int64_t n, std::shared_ptr<cuda::CompiledCode> code) {
  const cuda::Precision precision = planPrecision(plan);
  const Feeds feeds =
      roundTo(Feeds{{"x", randomFloats({n, 96}, 31, -2, 2)}, {"y", randomFloats({96}, 32, -2, 2)}},
              precision);
  std::vector<NamedTensor> expected;
  EXPECT_TRUE(ReferenceBackend(biasSwish()).run(feeds, &expected).isOk());
  std::vector<cuda::LayerInfo> layers;
  auto actual =
      runCudaPoisoned(*plan.network, feeds, precision, "out", &layers, false, {}, std::move(code));
  EXPECT_TRUE(actual.isOk()) << actual.status().toString();
  if (!actual.isOk() || layers.size() != 1) return "";
  const double tolerance = precision == cuda::Precision::kFloat32 ? 1e-5 : 4e-3;
  expectTensorNear(actual.value(), expected[0].tensor, tolerance, tolerance);
  return layers[0].implementation;
}

TEST(CudaPointwiseChainPlan, APlanLoadsItsCubinsAndCompilesNothingAtItsOptShapes) {
  KILN_REQUIRE_GPU();
  const cuda::DeviceInfo device = cuda::probeCudaDevice();
  for (bool fp16 : {false, true}) {
    SCOPED_TRACE(fp16 ? "fp16 build" : "fp32 build");
    auto built = buildSwishPlan(swishConfig(fp16));
    ASSERT_TRUE(built.isOk()) << built.status().toString();
    ASSERT_EQ(built->network->graph.nodes.size(), 1u);
    const std::string layer = built->network->graph.nodes[0].displayName();
    ASSERT_EQ(built->generatedKernels.size(), 1u);
    const GeneratedKernelBinary& kernel = built->generatedKernels[0];
    EXPECT_EQ(kernel.architecture, smArchitecture(device.computeMajor, device.computeMinor));
    EXPECT_EQ(kernel.layers, std::vector<std::string>{layer});
    EXPECT_GT(kernel.cubin.size(), 1000u);
    auto bytes = serializePlan(built.value());
    ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
    auto plan = deserializePlan(bytes.value(), "swish.kiln");
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    ASSERT_EQ(plan->generatedKernels.size(), 1u);

    // What an engine made from the plan gets (engineOptionsForPlan): code of its own,
    // holding the plan's cubin; nothing of the build's is shared.
    const cuda::EngineOptions options = cuda::engineOptionsForPlan(plan.value());
    ASSERT_TRUE(options.compiledCode);
    const std::shared_ptr<cuda::CompiledCode> code = options.compiledCode;
    ASSERT_TRUE(code->binaries().empty());  // preloaded, not loaded yet
    const int64_t before = cuda::nvrtcCompileCount();
    std::string text = runSwishPlan(plan.value(), 4, code);  // the opt shape
    EXPECT_EQ(cuda::nvrtcCompileCount(), before) << text;
    EXPECT_NE(text.find("B from plan)"), std::string::npos) << text;
    const auto loaded = code->binaries();
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0].key, kernel.key);
    // Another batch with the same access pattern is the same source: still no compile.
    text = runSwishPlan(plan.value(), 7, code);
    EXPECT_EQ(cuda::nvrtcCompileCount(), before) << text;
    // Batch 1 reads the bias full-shape: another source, compiled once, and said so.
    text = runSwishPlan(plan.value(), 1, code);
    EXPECT_EQ(cuda::nvrtcCompileCount(), before + 1) << text;
    EXPECT_NE(text.find(" compiled in "), std::string::npos) << text;
    EXPECT_EQ(code->binaries().size(), 2u);
    // An engine without the plan's code compiles the opt shape's kernel itself.
    text = runSwishPlan(plan.value(), 4, nullptr);
    EXPECT_EQ(cuda::nvrtcCompileCount(), before + 2) << text;
  }
}

TEST(CudaPointwiseChainPlan, AWarmTimingCacheBuildStillStoresTheCubin) {
  KILN_REQUIRE_GPU();
  TimingCache cache;
  auto cold = buildSwishPlan(swishConfig(false, &cache));
  ASSERT_TRUE(cold.isOk()) << cold.status().toString();
  ASSERT_EQ(cold->generatedKernels.size(), 1u);
  // The warm build's engines share nothing with the cold build's: it compiles the kernel.
  const int64_t before = cuda::nvrtcCompileCount();
  auto warm = buildSwishPlan(swishConfig(false, &cache));
  ASSERT_TRUE(warm.isOk()) << warm.status().toString();
  EXPECT_EQ(warm->record.candidatesTimed, 0);
  ASSERT_EQ(warm->generatedKernels.size(), 1u);
  EXPECT_EQ(warm->generatedKernels[0].key, cold->generatedKernels[0].key);
  EXPECT_EQ(cuda::nvrtcCompileCount(), before + 1);  // the plan's kernel, nothing timed
}

TEST(CudaPointwiseChainPlan, ACubinTheDriverRefusesIsCompiledInstead) {
  KILN_REQUIRE_GPU();
  auto plan = buildSwishPlan(swishConfig(false));
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->generatedKernels.size(), 1u);
  GeneratedKernelBinary damaged = plan->generatedKernels[0];
  std::fill(damaged.cubin.begin(), damaged.cubin.end(), char(0x5A));
  auto code = std::make_shared<cuda::CompiledCode>();
  code->preload({damaged});
  const int64_t before = cuda::nvrtcCompileCount();
  const std::string text = runSwishPlan(plan.value(), 4, code);  // still right: compiled
  EXPECT_EQ(cuda::nvrtcCompileCount(), before + 1) << text;
  EXPECT_NE(text.find(" compiled in "), std::string::npos) << text;
  EXPECT_NE(text.find("the plan's cubin was not used"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::test
