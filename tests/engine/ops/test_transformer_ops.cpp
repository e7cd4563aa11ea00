// Tests for the transformer op family: Attention, RMSNormalization, RotaryEmbedding,
// LinearAttention, CausalConvWithState, FlexAttention. See tests/support/op_test.h.
//
// Most attention cases use one query against keys {0, ln 3} and values {2, 6}: the
// scores are {0, ln 3}, the probabilities {1/4, 3/4}, and the output 0.5 + 4.5 = 5.
#include <cmath>
#include <limits>

#include "support/op_test.h"

namespace kiln::test {
namespace {

const float kLn3 = std::log(3.f);

Tensor boolTensor(const Shape& shape, const std::vector<uint8_t>& values) {
  return Tensor::fromVector(DataType::kBool, shape, values);
}

std::vector<Tensor> runAll(OpTest& test, int outputs) {
  auto out = test.run(outputs);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? out.value() : std::vector<Tensor>(outputs);
}

Tensor runOne(OpTest& test) {
  return runAll(test, 1)[0];
}

bool fails(OpTest& test, int outputs = 1) {
  return !test.run(outputs).isOk();
}

// ---- Attention -------------------------------------------------------------------

TEST(Attention, SingleQueryWeightsValuesBySoftmax) {
  OpTest t("Attention", 23);
  t.input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 1, 1}, {5}), 1e-5, 1e-5);
}

TEST(Attention, ScaleMultipliesScores) {
  // scale 4: scores {0, 4 * ln3 / 4} with K = ln3 / 4.
  OpTest t("Attention", 23);
  t.attr("scale", 4.f)
      .input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3 / 4}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 1, 1}, {5}), 1e-5, 1e-5);
}

TEST(Attention, CausalFirstQuerySeesOnlyFirstKey) {
  OpTest t("Attention", 23);
  t.attr("is_causal", int64_t{1})
      .input(floatTensor({1, 1, 2, 1}, {1, 1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 2, 1}, {2, 5}), 1e-5, 1e-5);
}

TEST(Attention, BoolMaskFullyMaskedRowIsZero) {
  OpTest t("Attention", 23);
  t.input(floatTensor({1, 1, 2, 1}, {1, 1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}))
      .input(boolTensor({2, 2}, {0, 0, 1, 1}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 2, 1}, {0, 5}), 1e-5, 1e-5);
}

TEST(Attention, FloatMaskShorterThanKeysPadsWithNegInf) {
  // Mask covers key 0 only; key 1 (value 1000) is padded out.
  OpTest t("Attention", 23);
  t.input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, 5}))
      .input(floatTensor({1, 1, 2, 1}, {2, 1000}))
      .input(floatTensor({1}, {0.5f}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 1, 1}, {2}), 1e-5, 1e-5);
}

TEST(Attention, PackedGroupedQueryHeadsShareKv) {
  // Two query heads, one KV head: head 0 scores {0, ln3} -> 5, head 1 scores {0, 0} -> 4.
  OpTest t("Attention", 23);
  t.attr("q_num_heads", int64_t{2})
      .attr("kv_num_heads", int64_t{1})
      .input(floatTensor({1, 1, 2}, {1, 0}))
      .input(floatTensor({1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 2}, {5, 4}), 1e-5, 1e-5);
}

TEST(Attention, PastAndPresentConcatenateAndQkOutputIsRaw) {
  OpTest t("Attention", 23);
  t.input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 1, 1}, {kLn3}))
      .input(floatTensor({1, 1, 1, 1}, {6}))
      .missingInput()
      .input(floatTensor({1, 1, 1, 1}, {0}))
      .input(floatTensor({1, 1, 1, 1}, {2}));
  const std::vector<Tensor> out = runAll(t, 4);
  expectTensorNear(out[0], floatTensor({1, 1, 1, 1}, {5}), 1e-5, 1e-5);
  expectTensorNear(out[1], floatTensor({1, 1, 2, 1}, {0, kLn3}), 0, 0);
  expectTensorNear(out[2], floatTensor({1, 1, 2, 1}, {2, 6}), 0, 0);
  expectTensorNear(out[3], floatTensor({1, 1, 1, 2}, {0, kLn3}), 1e-6, 1e-6);
}

TEST(Attention, SoftcapAndQkModes) {
  // softcap 2: 2 * tanh(ln3 / 2) = 1, so scores {0, 1} and Y = (2 + 6e) / (1 + e).
  const float y = (2.f + 6.f * std::exp(1.f)) / (1.f + std::exp(1.f));
  // Modes 0..2: raw scores, softcapped, softcapped + mask. Mode 3 (probabilities) below.
  const std::vector<std::vector<float>> expectedQk = {{0, kLn3}, {0, 1}, {0, 1 - 10}};
  for (int64_t mode = 0; mode < 4; ++mode) {
    OpTest t("Attention", 23);
    t.attr("softcap", 2.f)
        .attr("qk_matmul_output_mode", mode)
        .input(floatTensor({1, 1, 1, 1}, {1}))
        .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
        .input(floatTensor({1, 1, 2, 1}, {2, 6}))
        .input(floatTensor({1, 2}, {0, -10}));
    // The -10 mask on key 1 changes Y; recompute it for the masked scores {0, -9}.
    const float w1 = std::exp(-9.f) / (1.f + std::exp(-9.f));
    const std::vector<Tensor> out = runAll(t, 4);
    expectTensorNear(out[0], floatTensor({1, 1, 1, 1}, {2 * (1 - w1) + 6 * w1}), 1e-5, 1e-5);
    if (mode == 3) {
      expectTensorNear(out[3], floatTensor({1, 1, 1, 2}, {1 - w1, w1}), 1e-6, 1e-5);
    } else {
      expectTensorNear(out[3], floatTensor({1, 1, 1, 2}, expectedQk[mode]), 1e-6, 1e-5);
    }
  }
  OpTest plain("Attention", 23);
  plain.attr("softcap", 2.f)
      .input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(plain), floatTensor({1, 1, 1, 1}, {y}), 1e-5, 1e-5);
}

TEST(Attention, NonpadKvSeqlenIgnoresPadding) {
  OpTest t("Attention", 24);
  t.input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 3, 1}, {0, kLn3, 50}))
      .input(floatTensor({1, 1, 3, 1}, {2, 6, 1000}))
      .missingInput()
      .missingInput()
      .missingInput()
      .input(int64Tensor({1}, {2}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 1, 1}, {5}), 1e-5, 1e-5);
}

TEST(Attention, SlidingWindowLimitsKeys) {
  // Opset 25, query at position 2 of 3 with left window 1: keys 1 and 2 only.
  OpTest t("Attention", 25);
  t.attr("left_window_size", int64_t{1})
      .input(floatTensor({1, 1, 3, 1}, {0, 0, 1}))
      .input(floatTensor({1, 1, 3, 1}, {0, 0, kLn3}))
      .input(floatTensor({1, 1, 3, 1}, {1000, 2, 6}));
  const Tensor y = runOne(t);
  ASSERT_EQ(y.numel(), 3);
  EXPECT_NEAR(y.data<float>()[2], 5.f, 1e-4);
  // Query 0 (score 0 everywhere): the window reaches back past key 0 and is not
  // bounded on the right, so all three keys count equally.
  EXPECT_NEAR(y.data<float>()[0], (1000.f + 2.f + 6.f) / 3, 1e-3);
}

TEST(Attention, Float16InputsComputeInFloat) {
  const Tensor q = castTensor(floatTensor({1, 1, 1, 1}, {1}), DataType::kFloat16);
  const Tensor k = castTensor(floatTensor({1, 1, 2, 1}, {0, kLn3}), DataType::kFloat16);
  const Tensor v = castTensor(floatTensor({1, 1, 2, 1}, {2, 6}), DataType::kFloat16);
  OpTest t("Attention", 23);
  t.input(q).input(k).input(v);
  const Tensor y = runOne(t);
  ASSERT_EQ(y.type(), DataType::kFloat16);
  EXPECT_NEAR(y.valueAsDouble(0), 5.0, 1e-2);
}

TEST(Attention, RejectsBadShapes) {
  const Tensor q4 = floatTensor({1, 1, 1, 1}, {1});
  const Tensor kv4 = floatTensor({1, 1, 2, 1}, {0, 1});
  OpTest rank2("Attention", 23);
  rank2.input(floatTensor({1, 1}, {1})).input(kv4).input(kv4);
  EXPECT_TRUE(fails(rank2));
  OpTest noHeads("Attention", 23);
  noHeads.input(floatTensor({1, 1, 2}, {1, 1}))
      .input(floatTensor({1, 2, 2}, {0, 0, 0, 0}))
      .input(floatTensor({1, 2, 2}, {0, 0, 0, 0}));
  EXPECT_TRUE(fails(noHeads));
  OpTest heads("Attention", 23);
  heads.input(floatTensor({1, 3, 1, 1}, {1, 1, 1}))
      .input(floatTensor({1, 2, 2, 1}, {0, 0, 0, 0}))
      .input(floatTensor({1, 2, 2, 1}, {0, 0, 0, 0}));
  EXPECT_TRUE(fails(heads));
  OpTest longMask("Attention", 23);
  longMask.input(q4).input(kv4).input(kv4).input(floatTensor({1, 3}, {0, 0, 0}));
  EXPECT_TRUE(fails(longMask));
  OpTest halfCache("Attention", 23);
  halfCache.input(q4).input(kv4).input(kv4).missingInput().input(floatTensor({1, 1, 1, 1}, {0}));
  EXPECT_TRUE(fails(halfCache));
  OpTest named4d("Attention", 25);
  named4d.attr("q_num_heads", int64_t{1}).input(q4).input(kv4).input(kv4);
  EXPECT_TRUE(fails(named4d));
}

TEST(Attention, HostileHeadsSeqlensAndWindows) {
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  // 2^62 heads over an empty hidden size overflowed batch * heads and looped over them.
  const Tensor empty(DataType::kFloat32, {2, 1, 0});
  OpTest heads("Attention", 23);
  heads.attr("q_num_heads", int64_t{1} << 62)
      .attr("kv_num_heads", int64_t{1} << 62)
      .input(empty)
      .input(empty)
      .input(empty);
  EXPECT_TRUE(fails(heads));
  // nonpad_kv_seqlen INT64_MIN overflowed the query offset `nonpad - q_seq`.
  OpTest nonpad("Attention", 24);
  nonpad.input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}))
      .missingInput()
      .missingInput()
      .missingInput()
      .input(int64Tensor({1}, {kMin}));
  EXPECT_TRUE(fails(nonpad));
  // Windows of INT64_MAX bound nothing (the right edge's sum overflowed).
  OpTest window("Attention", 25);
  window.attr("left_window_size", kMax)
      .attr("right_window_size", kMax)
      .input(floatTensor({1, 1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(window), floatTensor({1, 1, 1, 1}, {5}), 1e-5, 1e-5);
}

// ---- RMSNormalization ------------------------------------------------------------

TEST(RmsNormalization, LastAxisWithScale) {
  OpTest t("RMSNormalization", 23);
  t.attr("epsilon", 0.f).input(floatTensor({1, 2}, {3, 4})).input(floatTensor({2}, {1, 2}));
  // rms = sqrt((9 + 16) / 2)
  expectTensorNear(runOne(t), floatTensor({1, 2}, {0.8485281f, 2.2627417f}), 1e-6, 1e-5);
}

TEST(RmsNormalization, AxisZeroNormalizesWholeTensor) {
  OpTest t("RMSNormalization", 23);
  t.attr("axis", int64_t{0})
      .attr("epsilon", 0.f)
      .input(floatTensor({2, 2}, {1, 1, 1, 1}))
      .input(floatTensor({1}, {3}));
  expectTensorNear(runOne(t), floatTensor({2, 2}, {3, 3, 3, 3}), 1e-6, 1e-6);
}

TEST(RmsNormalization, RejectsScaleThatDoesNotBroadcast) {
  OpTest t("RMSNormalization", 23);
  t.input(floatTensor({1, 2}, {3, 4})).input(floatTensor({3}, {1, 1, 1}));
  EXPECT_TRUE(fails(t));
  OpTest axis("RMSNormalization", 23);
  axis.attr("axis", int64_t{2}).input(floatTensor({1, 2}, {3, 4})).input(floatTensor({1}, {1}));
  EXPECT_TRUE(fails(axis));
}

// ---- RotaryEmbedding -------------------------------------------------------------

// cos {0, 1}, sin {1, 0}: the first pair turns by 90 degrees, the second not at all.
TEST(RotaryEmbedding, HalvesAndInterleaved) {
  const Tensor x = floatTensor({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor cosCache = floatTensor({1, 1, 2}, {0, 1});
  const Tensor sinCache = floatTensor({1, 1, 2}, {1, 0});
  OpTest halves("RotaryEmbedding", 23);
  halves.input(x).input(cosCache).input(sinCache);
  expectTensorNear(runOne(halves), floatTensor({1, 1, 1, 4}, {-3, 2, 1, 4}), 0, 0);
  OpTest interleaved("RotaryEmbedding", 23);
  interleaved.attr("interleaved", int64_t{1}).input(x).input(cosCache).input(sinCache);
  expectTensorNear(runOne(interleaved), floatTensor({1, 1, 1, 4}, {-2, 1, 3, 4}), 0, 0);
}

TEST(RotaryEmbedding, PositionIdsPartialRotationPackedInput) {
  // 3-D input, 2 heads of 4 features, rotary dim 2: only features 0 and 1 of each head turn.
  OpTest t("RotaryEmbedding", 23);
  t.attr("num_heads", int64_t{2})
      .attr("rotary_embedding_dim", int64_t{2})
      .input(floatTensor({1, 1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}))
      .input(floatTensor({3, 1}, {1, 1, 0}))
      .input(floatTensor({3, 1}, {0, 0, 1}))
      .input(int64Tensor({1, 1}, {2}));
  expectTensorNear(runOne(t), floatTensor({1, 1, 8}, {-2, 1, 3, 4, -6, 5, 7, 8}), 0, 0);
}

TEST(RotaryEmbedding, RejectsPositionOutsideCache) {
  OpTest t("RotaryEmbedding", 23);
  t.input(floatTensor({1, 1, 1, 2}, {1, 2}))
      .input(floatTensor({2, 1}, {1, 1}))
      .input(floatTensor({2, 1}, {0, 0}))
      .input(int64Tensor({1, 1}, {2}));
  EXPECT_TRUE(fails(t));
  OpTest odd("RotaryEmbedding", 23);
  odd.input(floatTensor({1, 1, 1, 3}, {1, 2, 3}))
      .input(floatTensor({1, 1, 1}, {1}))
      .input(floatTensor({1, 1, 1}, {0}));
  EXPECT_TRUE(fails(odd));
}

// ---- LinearAttention and CausalConvWithState -------------------------------------

// One head, d_k = d_v = 1, q = {1, 1}, k = {1, 2}, v = {3, 4}, scale 1.
OpTest linearAttention(const std::string& rule) {
  OpTest t("LinearAttention", 27);
  t.attr("update_rule", rule)
      .attr("q_num_heads", int64_t{1})
      .attr("kv_num_heads", int64_t{1})
      .attr("scale", 1.f)
      .input(floatTensor({1, 2, 1}, {1, 1}))
      .input(floatTensor({1, 2, 1}, {1, 2}))
      .input(floatTensor({1, 2, 1}, {3, 4}));
  return t;
}

TEST(LinearAttention, UpdateRules) {
  OpTest linear = linearAttention("linear");  // S: 3, then 3 + 2*4 = 11
  std::vector<Tensor> out = runAll(linear, 2);
  expectTensorNear(out[0], floatTensor({1, 2, 1}, {3, 11}), 1e-6, 1e-6);
  expectTensorNear(out[1], floatTensor({1, 1, 1, 1}, {11}), 1e-6, 1e-6);

  OpTest gated = linearAttention("gated");  // S: 3, then 0.5*3 + 8 = 9.5
  gated.missingInput().input(floatTensor({1, 2, 1}, {0, std::log(0.5f)}));
  expectTensorNear(runAll(gated, 2)[0], floatTensor({1, 2, 1}, {3, 9.5f}), 1e-5, 1e-5);

  // S: 3; then retrieved 3*2 = 6, update 0.5*(4 - 6) = -1, S = 3 + 2*(-1) = 1.
  OpTest delta = linearAttention("delta");
  delta.missingInput().missingInput().input(floatTensor({1, 2, 1}, {1, 0.5f}));
  expectTensorNear(runAll(delta, 2)[0], floatTensor({1, 2, 1}, {3, 1}), 1e-6, 1e-6);
}

TEST(LinearAttention, PastStateAndErrors) {
  OpTest past = linearAttention("linear");
  past.input(floatTensor({1, 1, 1, 1}, {10}));
  expectTensorNear(runAll(past, 2)[0], floatTensor({1, 2, 1}, {13, 21}), 1e-6, 1e-6);
  OpTest noDecay = linearAttention("gated");
  EXPECT_TRUE(fails(noDecay, 2));
  OpTest badState = linearAttention("linear");
  badState.input(floatTensor({1, 1, 2, 1}, {0, 0}));
  EXPECT_TRUE(fails(badState, 2));
}

TEST(CausalConvWithState, PastStateBiasAndPresent) {
  // padded = {4, 1, 2, 3}; y[t] = 10*p[t] + p[t+1] + 0.5
  OpTest t("CausalConvWithState", 27);
  t.input(floatTensor({1, 1, 3}, {1, 2, 3}))
      .input(floatTensor({1, 1, 2}, {10, 1}))
      .input(floatTensor({1}, {0.5f}))
      .input(floatTensor({1, 1, 1}, {4}));
  const std::vector<Tensor> out = runAll(t, 2);
  expectTensorNear(out[0], floatTensor({1, 1, 3}, {41.5f, 12.5f, 23.5f}), 1e-6, 1e-6);
  expectTensorNear(out[1], floatTensor({1, 1, 1}, {3}), 0, 0);
}

TEST(CausalConvWithState, SiluAndErrors) {
  OpTest silu("CausalConvWithState", 27);
  silu.attr("activation", std::string("silu"))
      .input(floatTensor({1, 1, 2}, {1, -1}))
      .input(floatTensor({1, 1, 1}, {1}));
  const float s1 = 1.f / (1.f + std::exp(-1.f));
  expectTensorNear(runAll(silu, 2)[0], floatTensor({1, 1, 2}, {s1, -(1.f - s1)}), 1e-6, 1e-5);
  OpTest badAct("CausalConvWithState", 27);
  badAct.attr("activation", std::string("relu"))
      .input(floatTensor({1, 1, 2}, {1, -1}))
      .input(floatTensor({1, 1, 1}, {1}));
  EXPECT_TRUE(fails(badAct, 2));
  OpTest badWeight("CausalConvWithState", 27);
  badWeight.input(floatTensor({1, 1, 2}, {1, -1})).input(floatTensor({2, 1, 1}, {1, 1}));
  EXPECT_TRUE(fails(badWeight, 2));
}

// ---- FlexAttention ---------------------------------------------------------------

TEST(FlexAttention, MatchesPlainAttentionWithGqa) {
  OpTest t("FlexAttention", 1, "ai.onnx.preview");
  t.input(floatTensor({1, 2, 1, 1}, {1, 0}))
      .input(floatTensor({1, 1, 2, 1}, {0, kLn3}))
      .input(floatTensor({1, 1, 2, 1}, {2, 6}));
  expectTensorNear(runOne(t), floatTensor({1, 2, 1, 1}, {5, 4}), 1e-5, 1e-5);
  OpTest bad("FlexAttention", 1, "ai.onnx.preview");
  bad.input(floatTensor({1, 1, 1}, {1}))
      .input(floatTensor({1, 2, 1}, {0, 0}))
      .input(floatTensor({1, 2, 1}, {0, 0}));
  EXPECT_TRUE(fails(bad));
}

}  // namespace
}  // namespace kiln::test
