// ops/rnn_params: each cell's default activations, one direction's list serving both
// directions, names without case, alphas and betas consumed in order by the activations
// that take them (the defaults otherwise), and the refusals (a list of the wrong length;
// a name ONNX does not define, as unsupported). No backend.
#include <gtest/gtest.h>

#include "ops/rnn_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

using Kind = ops::RnnActivation::Kind;

Node lstm() {
  return test::makeNode("LSTM", {"x", "w", "r"}, {"y"}, 14);
}

TEST(RnnParams, DefaultsPerCellAndBothDirections) {
  auto gru = ops::rnnActivations(test::makeNode("GRU", {"x", "w", "r"}, {"y"}, 14),
                                 ops::RnnCell::kGru, 2);
  ASSERT_TRUE(gru.isOk());
  ASSERT_EQ(gru->size(), 4u);
  EXPECT_EQ((*gru)[0].kind, Kind::kSigmoid);
  EXPECT_EQ((*gru)[1].kind, Kind::kTanh);
  EXPECT_EQ((*gru)[2].kind, Kind::kSigmoid);  // the forward list serves the reverse one
  EXPECT_EQ(ops::rnnActivationsPerDirection(ops::RnnCell::kLstm), 3);
  EXPECT_EQ(ops::rnnActivationsPerDirection(ops::RnnCell::kRnn), 1);
}

TEST(RnnParams, NamesAlphasAndBetas) {
  Node n = lstm();
  n.attributes["activations"].kind = Attribute::Kind::kStrings;
  n.attributes["activations"].strings = {"HardSigmoid", "affine", "LeakyRelu"};
  n = test::withFloat(n, "unused", 0.f);
  n.attributes["activation_alpha"].kind = Attribute::Kind::kFloats;
  n.attributes["activation_alpha"].floats = {0.3f, 2.f};
  n.attributes["activation_beta"].kind = Attribute::Kind::kFloats;
  n.attributes["activation_beta"].floats = {0.4f};
  auto acts = ops::rnnActivations(n, ops::RnnCell::kLstm, 1);
  ASSERT_TRUE(acts.isOk()) << acts.status().message();
  EXPECT_EQ((*acts)[0].kind, Kind::kHardSigmoid);
  EXPECT_FLOAT_EQ((*acts)[0].alpha, 0.3f);
  EXPECT_FLOAT_EQ((*acts)[0].beta, 0.4f);
  EXPECT_EQ((*acts)[1].kind, Kind::kAffine);
  EXPECT_FLOAT_EQ((*acts)[1].alpha, 2.f);
  EXPECT_FLOAT_EQ((*acts)[1].beta, 0.f);       // betas used up: Affine's default
  EXPECT_FLOAT_EQ((*acts)[2].alpha, 0.01f);    // alphas used up: LeakyRelu's default
}

TEST(RnnParams, Refusals) {
  Node n = lstm();
  n.attributes["activations"].kind = Attribute::Kind::kStrings;
  n.attributes["activations"].strings = {"Sigmoid", "Tanh"};
  auto wrong = ops::rnnActivations(n, ops::RnnCell::kLstm, 1);
  ASSERT_FALSE(wrong.isOk());
  EXPECT_EQ(wrong.status().message(), "attribute 'activations' needs 3 entries, got 2");
  n.attributes["activations"].strings = {"Sigmoid", "Gelu", "Tanh"};
  auto unknown = ops::rnnActivations(n, ops::RnnCell::kLstm, 1);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(unknown.status().message(), "activation 'Gelu'");
}

}  // namespace
}  // namespace kiln
