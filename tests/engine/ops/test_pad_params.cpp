// ops/pad_params: pads per axis (all axes, or opset 18's axes; an explicit empty axes
// input pads nothing), modes per opset, negative pads crop, and the refusals.
#include <gtest/gtest.h>

#include "ops/pad_params.h"
#include "support/test_graph.h"

namespace kiln {
namespace {

Node pad(const char* mode = "constant", int opset = 19) {
  Node n = test::makeNode("Pad", {"x", "pads"}, {"y"}, opset);
  n.attributes["mode"].kind = Attribute::Kind::kString;
  n.attributes["mode"].s = mode;
  return n;
}

TEST(PadParams, PadsPerAxis) {
  auto p = ops::planPad(pad(), 19, {2, 3, 4}, {0, 1, -1, 0, 2, 1}, {}, false);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->outShape, (Shape{2, 6, 4}));
  EXPECT_EQ(p->begins, (std::vector<int64_t>{0, 1, -1}));
  p = ops::planPad(pad("reflect"), 19, {2, 3, 4}, {1, 2}, {-1}, true);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->outShape, (Shape{2, 3, 7}));
  EXPECT_EQ(p->mode, "reflect");
  // An explicit empty axes input pads nothing: pads must be empty too.
  EXPECT_EQ(ops::planPad(pad(), 19, {2, 3}, {1, 1, 1, 1}, {}, true).status().message(),
            "pads has 4 entries for 0 axes");
}

TEST(PadParams, Refusals) {
  EXPECT_EQ(ops::planPad(pad("wrap", 18), 18, {4}, {1, 1}, {}, false).status().message(),
            "unsupported mode 'wrap'");
  EXPECT_EQ(ops::planPad(pad(), 19, {4}, {int64_t{1} << 40, 0}, {}, false).status().message(),
            "pads are too large");
  EXPECT_EQ(ops::planPad(pad(), 19, {4}, {-3, -3}, {}, false).status().message(),
            "output has a negative dim: -2");
  EXPECT_EQ(ops::planPad(pad(), 19, {4, 4}, {1, 1}, {2}, true).status().message(),
            "axis 2 is out of range for rank 2");
}

}  // namespace
}  // namespace kiln
