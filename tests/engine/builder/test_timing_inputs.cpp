// Timing inputs of the builder (engine/builder/timing_inputs.cpp): synthetic inputs are
// the opt shape's size, seeded, non-zero, made by repeating one random block per type,
// and served from a cache while it is small.
#include <gtest/gtest.h>

#include <cstring>

#include "builder/build_steps.h"
#include "builder_fixture.h"

namespace kiln::test {
namespace {

using build::TimingInputs;

// The first node of the classifier that reads the graph input "x".
const Node& nodeReadingInput(const Network& network) {
  for (const Node& node : network.graph.nodes)
    for (const std::string& in : node.inputs)
      if (in == "x") return node;
  ADD_FAILURE() << "no node reads x";
  return network.graph.nodes.front();
}

// Batch 64 x 3 x 48 x 192 = 1,769,472 elements: more than one random block.
const Shape kOptShape = {64, 3, 48, 192};

TEST(TimingInputs, SyntheticInputIsSeededRandomRepeatingOneBlock) {
  auto network = classifierNetwork();
  TimingInputs inputs(*network, {{"x", kOptShape}}, 5);
  ASSERT_TRUE(inputs.inferShapes().isOk());
  const Node& node = nodeReadingInput(*network);
  auto layer = inputs.forNode(node, false);
  ASSERT_TRUE(layer.isOk()) << layer.status().toString();
  ASSERT_TRUE(inputs.lastWasSynthetic());
  const Tensor& x = *(*layer)->inputs.at(0);
  ASSERT_EQ(x.shape(), kOptShape);
  ASSERT_EQ(x.type(), DataType::kFloat32);
  const float* v = x.data<float>();
  const int64_t period = TimingInputs::kRandomBlockElements;
  ASSERT_GT(x.numel(), period + 1000);
  int distinct = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_GE(v[i], -1.f);
    EXPECT_LE(v[i], 1.f);
    EXPECT_NE(v[i], 0.f) << i;
    distinct += v[i] != v[i + 1];
    EXPECT_EQ(v[i], v[i + period]) << i;  // the block repeats
  }
  EXPECT_GT(distinct, 990);
  // The tail after the last whole block is the block's start.
  const int64_t tail = (x.numel() / period) * period;
  EXPECT_EQ(std::memcmp(v + tail, v, (x.numel() - tail) * sizeof(float)), 0);
}

TEST(TimingInputs, SameSeedSameValuesAndTheCacheServesARepeatedShape) {
  auto network = classifierNetwork();
  const Node& node = nodeReadingInput(*network);
  TimingInputs first(*network, {{"x", kOptShape}}, 11), second(*network, {{"x", kOptShape}}, 11),
      other(*network, {{"x", kOptShape}}, 12);
  for (TimingInputs* t : {&first, &second, &other}) ASSERT_TRUE(t->inferShapes().isOk());
  const Tensor* a = (*first.forNode(node, false))->inputs.at(0);
  const Tensor* b = (*second.forNode(node, false))->inputs.at(0);
  const Tensor* c = (*other.forNode(node, false))->inputs.at(0);
  ASSERT_EQ(a->byteSize(), b->byteSize());
  EXPECT_EQ(std::memcmp(a->rawData(), b->rawData(), a->byteSize()), 0);
  EXPECT_NE(std::memcmp(a->rawData(), c->rawData(), a->byteSize()), 0);
  // Asked again, the same shape is the same tensor (made once).
  const Tensor* again = (*first.forNode(node, false))->inputs.at(0);
  EXPECT_EQ(again->rawData(), a->rawData());
}

}  // namespace
}  // namespace kiln::test
