#include <gtest/gtest.h>

#include "kiln/dim.h"

namespace kiln {
namespace {

TEST(DimExpr, FoldsConstantsAndIdentities) {
  DimExpr b = DimExpr::symbol("batch");
  EXPECT_EQ((DimExpr(3) + DimExpr(4)).constValue(), 7);
  EXPECT_EQ(b + 0, b);
  EXPECT_EQ(b * 1, b);
  EXPECT_TRUE((b * 0).isConst());
  EXPECT_EQ(b - b, DimExpr(0));
  EXPECT_EQ(DimExpr::floorDiv(-7, 2).constValue(), -4);
  EXPECT_EQ(DimExpr::ceilDiv(7, 2).constValue(), 4);
}

TEST(DimExpr, CommutativeFormsCompareEqual) {
  DimExpr a = DimExpr::symbol("a"), s = DimExpr::symbol("seq");
  EXPECT_EQ(a * s, s * a);
  EXPECT_EQ(a + 2, DimExpr(2) + a);
}

TEST(DimExpr, EvaluatesWithBindings) {
  DimExpr h = DimExpr::symbol("h");
  DimExpr out = DimExpr::floorDiv(h + 2 - 3, 2) + 1;  // conv 3x3, pad 1+1, stride 2
  EXPECT_FALSE(out.evaluate().has_value());
  EXPECT_EQ(out.evaluate({{"h", 224}}).value(), 112);
  EXPECT_EQ(out.evaluate({{"h", 7}}).value(), 4);
}

TEST(DimExpr, PrintsReadably) {
  DimExpr b = DimExpr::symbol("batch");
  EXPECT_EQ((b * 3).toString(), "batch*3");
  EXPECT_EQ(symbolicShapeToString({b, 3, 224}), "batchx3x224");
}

}  // namespace
}  // namespace kiln
