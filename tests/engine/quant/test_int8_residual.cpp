// INT8 residual blocks (ir/quantized_layers.h slot 9, z_scale): a QuantizedConv with
// an int8 Z against the float computation of the same numbers, its one-line errors,
// and an implicit INT8 build of a small residual CNN (three blocks, one with a
// downsample conv) whose block outputs stay int8: every residual is an int8 Z, no
// QuantizeLinear runs on its own between blocks, and the plan stays close to FP32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/quantized_layers.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/passes.h"
#include "kiln/shape_inference.h"
#include "compare/error_stats.h"
#include "engine/quant/quant_test_support.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

// ---- the CPU reference of QuantizedConv with an int8 Z ------------------------------

constexpr int64_t kM = 3, kC = 2, kH = 5, kW = 4;

Tensor int8Tensor(const Shape& shape, uint32_t seed) {
  Tensor t(DataType::kInt8, shape);
  const Tensor r = randomTensor(DataType::kFloat32, shape, seed, -127.5, 127.5);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int8_t>()[i] =
        static_cast<int8_t>(std::lround(std::clamp(r.data<float>()[i], -127.f, 127.f)));
  return t;
}

Tensor scalarTensor(float v) {
  return floatTensor({}, {v});
}

struct ResidualCase {
  Tensor x = int8Tensor({1, kC, kH, kW}, 1);
  Tensor w = int8Tensor({kM, kC, 3, 3}, 2);
  Tensor b = floatTensor({kM}, {0.3f, -0.2f, 0.1f});
  Tensor z = int8Tensor({1, kM, kH, kW}, 3);
  float xScale = 0.02f, zScale = 0.05f;
  Tensor wScale = floatTensor({kM}, {0.004f, 0.002f, 0.003f});
};

// QuantizedConv (3x3, pads 1, relu) on `c` with Z and z_scale as given.
OpTest quantizedConv(const ResidualCase& c, const Tensor& z, const Tensor* zScale) {
  OpTest op(kQuantizedConvOp, 1, kKilnDomain);
  op.attr("pads", std::vector<int64_t>{1, 1, 1, 1}).attr("activation", std::string("relu"));
  op.input(c.x).input(c.w).input(c.b).input(z).input(scalarTensor(c.xScale)).missingInput();
  op.input(c.wScale).missingInput().missingInput();
  if (zScale) op.input(*zScale);
  return op;
}

// relu(conv(sx * xq, sw[m] * wq) + b[m] + sz * zq), every product in double.
Tensor floatReference(const ResidualCase& c) {
  Tensor y(DataType::kFloat32, {1, kM, kH, kW});
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t w = 0; w < kW; ++w) {
        double acc = c.b.data<float>()[m];
        for (int64_t ch = 0; ch < kC; ++ch)
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t s = 0; s < 3; ++s) {
              const int64_t ih = h + r - 1, iw = w + s - 1;
              if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
              const double xv = c.xScale * double(c.x.data<int8_t>()[(ch * kH + ih) * kW + iw]);
              const double wv = c.wScale.data<float>()[m] *
                                double(c.w.data<int8_t>()[((m * kC + ch) * 3 + r) * 3 + s]);
              acc += xv * wv;
            }
        const int64_t i = (m * kH + h) * kW + w;
        acc += c.zScale * double(c.z.data<int8_t>()[i]);
        y.data<float>()[i] = static_cast<float>(std::max(acc, 0.0));
      }
  return y;
}

TEST(QuantizedConvResidual, Int8ZWithScaleMatchesTheFloatComputation) {
  const ResidualCase c;
  const Tensor zScale = scalarTensor(c.zScale);
  auto out = quantizedConv(c, c.z, &zScale).run();
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const Tensor expected = floatReference(c);
  double maxValue = 0;
  for (int64_t i = 0; i < expected.numel(); ++i)
    maxValue = std::max(maxValue, double(expected.data<float>()[i]));
  EXPECT_GT(maxValue, 0.5);  // not a zero output
  expectTensorNear((*out)[0], expected, 1e-5, 1e-5);
  // The same residual as a float Z (z_scale * zq) gives the same output.
  Tensor zFloat(DataType::kFloat32, c.z.shape());
  for (int64_t i = 0; i < zFloat.numel(); ++i)
    zFloat.data<float>()[i] = c.zScale * c.z.data<int8_t>()[i];
  auto viaFloat = quantizedConv(c, zFloat, nullptr).run();
  ASSERT_TRUE(viaFloat.isOk()) << viaFloat.status().toString();
  expectTensorNear((*viaFloat)[0], (*out)[0], 1e-6, 1e-6);
}

TEST(QuantizedConvResidual, BadZScaleIsAOneLineErrorNamingTheNode) {
  const ResidualCase c;
  const Tensor twoScales = floatTensor({2}, {0.05f, 0.05f});
  const Tensor negative = scalarTensor(-0.05f);
  const Tensor zFloat = randomTensor(DataType::kFloat32, c.z.shape(), 4);
  const Tensor zScale = scalarTensor(c.zScale);
  const struct {
    const char* what;
    Tensor z;
    const Tensor* scale;
    const char* message;
  } cases[] = {
      {"int8 Z, no z_scale", c.z, nullptr, "input 3 (Z) is int8 but input 9 (z_scale) is absent"},
      {"two z_scales", c.z, &twoScales, "input 9 (z_scale) must be one float32 value"},
      {"negative z_scale", c.z, &negative, "input 9 (z_scale) must be positive and finite"},
      {"float Z with z_scale", zFloat, &zScale, "input 3 (Z) is not int8"},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.what);
    auto out = quantizedConv(c, bad.z, bad.scale).run();
    ASSERT_FALSE(out.isOk());
    const std::string message = out.status().message();
    EXPECT_NE(message.find("node 'QuantizedConv_test'"), std::string::npos) << message;
    EXPECT_NE(message.find(bad.message), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// ---- implicit INT8 of a residual CNN ------------------------------------------------

constexpr int64_t kBatch = 2;

struct CnnBuilder {
  Graph& g;
  uint32_t seed = 100;

  // Conv (He-uniform weights, bias) + BatchNormalization [+ Relu]: returns the output.
  std::string convBn(const std::string& name, const std::string& x, int64_t in, int64_t out,
                     int64_t k, int64_t stride, bool relu) {
    const double bound = std::sqrt(6.0 / double(in * k * k));
    g.initializers[name + "_w"] =
        randomTensor(DataType::kFloat32, {out, in, k, k}, ++seed, -bound, bound);
    g.initializers[name + "_b"] = randomTensor(DataType::kFloat32, {out}, ++seed, -0.1, 0.1);
    Node conv = makeNode("Conv", {x, name + "_w", name + "_b"}, {name + "_c"});
    conv.name = name;
    conv = withInts(withInts(conv, "pads", std::vector<int64_t>(4, k / 2)), "strides",
                    {stride, stride});
    g.nodes.push_back(withInts(conv, "kernel_shape", {k, k}));
    const double ranges[4][2] = {{0.5, 1.5}, {-0.1, 0.1}, {-0.1, 0.1}, {0.5, 1.5}};
    std::vector<std::string> bnInputs = {name + "_c"};
    for (int i = 0; i < 4; ++i) {
      const std::string p = name + "_bn" + std::to_string(i);
      g.initializers[p] =
          randomTensor(DataType::kFloat32, {out}, ++seed, ranges[i][0], ranges[i][1]);
      bnInputs.push_back(p);
    }
    Node bn = makeNode("BatchNormalization", bnInputs, {name + "_bn"});
    bn.name = name + "_bn";
    g.nodes.push_back(bn);
    if (!relu) return name + "_bn";
    g.nodes.push_back(makeNode("Relu", {name + "_bn"}, {name + "_r"}));
    return name + "_r";
  }

  // y = Relu(convBn(relu(convBn(x))) + shortcut); the shortcut is x or a 1x1 stride-2
  // downsample conv (written after the main branch, as torchvision exports it), the
  // Add's second input or (shortcutFirst) its first.
  std::string block(const std::string& name, const std::string& x, int64_t in, int64_t out,
                    bool downsample, bool shortcutFirst = false) {
    const int64_t stride = downsample ? 2 : 1;
    const std::string a = convBn(name + "a", x, in, out, 3, stride, true);
    const std::string b = convBn(name + "b", a, out, out, 3, 1, false);
    const std::string shortcut = downsample ? convBn(name + "d", x, in, out, 1, 2, false) : x;
    g.nodes.push_back(makeNode("Add",
                               shortcutFirst ? std::vector<std::string>{shortcut, b}
                                             : std::vector<std::string>{b, shortcut},
                               {name + "_sum"}));
    g.nodes.push_back(makeNode("Relu", {name + "_sum"}, {name + "_y"}));
    return name + "_y";
  }
};

// input [2, 3, 16, 16] -> stem conv0 (8) -> block1 (8, identity) -> block2 (16,
// stride 2, downsample) -> block3 (16, identity, Add(shortcut, main)) ->
// GlobalAveragePool -> Flatten -> Gemm (10) -> logits; block3's output is a second
// graph output.
Network residualCnn() {
  Network net;
  net.opsets[""] = 17;
  Graph& g = net.graph;
  g.inputs = {
      {"input", DataType::kFloat32, true, {DimExpr(kBatch), DimExpr(3), DimExpr(16), DimExpr(16)}}};
  CnnBuilder b{g};
  const std::string stem = b.convBn("conv0", "input", 3, 8, 3, 1, true);
  const std::string y1 = b.block("block1", stem, 8, 8, false);
  const std::string y2 = b.block("block2", y1, 8, 16, true);
  const std::string y3 = b.block("block3", y2, 16, 16, false, /*shortcutFirst=*/true);
  g.nodes.push_back(makeNode("GlobalAveragePool", {y3}, {"pooled"}));
  g.nodes.push_back(makeNode("Flatten", {"pooled"}, {"flat"}));
  g.initializers["fc_w"] = randomTensor(DataType::kFloat32, {10, 16}, 7, -0.5, 0.5);
  g.initializers["fc_b"] = randomTensor(DataType::kFloat32, {10}, 8, -0.1, 0.1);
  g.nodes.push_back(withInt(makeNode("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}), "transB", 1));
  g.outputs = {{"logits", DataType::kFloat32, false, {}}, {y3, DataType::kFloat32, false, {}}};
  return net;
}

std::map<std::string, Tensor> randomInput(uint32_t seed) {
  return {{"input", randomTensor(DataType::kFloat32, {kBatch, 3, 16, 16}, seed, -1.0, 1.0)}};
}

Plan buildInt8(const Network& network) {
  std::vector<std::map<std::string, Tensor>> batches;
  for (uint32_t s = 0; s < 8; ++s) batches.push_back(randomInput(1000 + s));
  CalibrationOptions options;
  options.method = CalibrationMethod::kEntropy;
  auto calibrated = calibrateNetwork(network, batches, options);
  EXPECT_TRUE(calibrated.isOk()) << calibrated.status().toString();
  BuilderConfig config;
  config.optimizationLevel = 1;
  config.int8 = true;
  config.calibration = &calibrated->table;
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(std::make_shared<const Network>(network), config, *backend);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? std::move(plan.value()) : Plan();
}

bool hasSource(const Node& n, const std::string& onnxNode) {
  for (const std::string& s : n.attrStrings(kSourceNodesAttribute))
    if (s == onnxNode) return true;
  return n.displayName() == onnxNode;
}

const Node* layerFrom(const Graph& g, const std::string& onnxNode) {
  for (const Node& n : g.nodes)
    if (hasSource(n, onnxNode)) return &n;
  return nullptr;
}

const Node* producerOf(const Graph& g, const std::string& value) {
  for (const Node& n : g.nodes)
    for (const std::string& out : n.outputs)
      if (out == value) return &n;
  return nullptr;
}

double maxAbsValue(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(double(t.data<float>()[i])));
  return m;
}

TEST(Int8Residual, BlockOutputsStayInt8AndThePlanStaysCloseToFp32) {
  const Network network = residualCnn();
  const Plan plan = buildInt8(network);
  ASSERT_TRUE(plan.network);
  const Graph& g = plan.network->graph;
  auto shapes = inferShapes(*plan.network);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  auto typeOf = [&](const std::string& v) { return shapes->values.at(v).type; };

  // Every conv is INT8; each block's second conv reads its residual as an int8 Z.
  int quantizedConvs = 0, int8Residuals = 0;
  for (const Node& n : g.nodes) {
    if (n.opType != kQuantizedConvOp) continue;
    ++quantizedConvs;
    if (!n.hasInput(kQuantResidual)) continue;
    EXPECT_TRUE(n.hasInput(kQuantZScale)) << n.displayName();
    EXPECT_EQ(typeOf(n.inputs[kQuantResidual]), DataType::kInt8) << n.displayName();
    int8Residuals += typeOf(n.inputs[kQuantResidual]) == DataType::kInt8;
  }
  EXPECT_EQ(quantizedConvs, 8);  // conv0, two per block and block2's downsample
  EXPECT_EQ(int8Residuals, 3);
  // block2's main branch took the Add; the downsample conv writes its int8 Z.
  const Node* block2b = layerFrom(g, "block2b");
  ASSERT_NE(block2b, nullptr);
  ASSERT_TRUE(block2b->hasInput(kQuantResidual));
  const Node* downsample = producerOf(g, block2b->inputs[kQuantResidual]);
  ASSERT_NE(downsample, nullptr);
  EXPECT_TRUE(hasSource(*downsample, "block2d")) << downsample->displayName();
  EXPECT_TRUE(downsample->hasInput(kQuantYScale));  // its Q folded in: an INT8 output
  // Block outputs are int8: the stem's and the blocks' last convs (but the last
  // block's, which a float GlobalAveragePool and the graph output read) write int8.
  for (const char* last : {"conv0", "block1b", "block2b"}) {
    const Node* n = layerFrom(g, last);
    ASSERT_NE(n, nullptr) << last;
    EXPECT_TRUE(n->hasInput(kQuantYScale)) << last;
  }
  // Two QuantizeLinear layers remain, neither between blocks: the input's (conv0) and
  // the flattened features' (the Gemm). No DequantizeLinear remains.
  int quantizes = 0, dequantizes = 0;
  for (const Node& n : g.nodes) {
    dequantizes += n.opType == "DequantizeLinear";
    if (n.opType != "QuantizeLinear") continue;
    ++quantizes;
    const Node* p = producerOf(g, n.inputs[0]);
    EXPECT_TRUE(!p || p->opType == "Flatten") << n.displayName() << " reads " << n.inputs[0];
  }
  EXPECT_EQ(quantizes, 2);
  EXPECT_EQ(dequantizes, 0);

  // INT8 plan against the FP32 reference on held-out random non-zero inputs. The
  // stated bounds (seen: cosine 0.99993 and 2% on the logits, 0.9993 and 9% on the
  // feature map): logits cosine >= 0.999 and max abs error within 5% of the largest
  // logit; the last block's feature map cosine >= 0.998 and max abs error within 15%
  // of its largest value.
  const struct { double cosine, maxAbsFraction; } bounds[2] = {{0.999, 0.05}, {0.998, 0.15}};
  for (uint32_t seed : {7u, 8u}) {
    const auto in = randomInput(seed);
    const auto reference = runOnCpu(network, in);
    const auto quantized = runOnCpu(*plan.network, in, &plan);
    ASSERT_EQ(reference.size(), 2u);
    ASSERT_EQ(quantized.size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      SCOPED_TRACE(reference[o].name + " seed " + std::to_string(seed));
      const compare::ErrorStats a =
          compare::computeErrorStats(reference[o].name, quantized[o].tensor, reference[o].tensor,
                                     compare::defaultTolerance(DataType::kFloat32));
      const double largest = maxAbsValue(reference[o].tensor);
      EXPECT_GT(largest, 0.5);   // not a zero output
      EXPECT_GT(a.maxAbs, 0.0);  // the plan really computed in INT8
      EXPECT_GE(a.cosine, bounds[o].cosine) << compare::formatAccuracySummary({a});
      EXPECT_LE(a.maxAbs, bounds[o].maxAbsFraction * largest)
          << compare::formatAccuracySummary({a});
    }
  }
}

}  // namespace
}  // namespace kiln::test
