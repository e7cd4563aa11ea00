#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "kiln/onnx_import.h"
#include "kiln/tensor_io.h"

namespace kiln {
namespace {

std::string fixture(const std::string& name) {
  return std::string(KILN_TEST_DATA_DIR) + "/" + name;
}

TEST(TensorIo, ReadsNpyWrittenByNumpy) {
  auto t = readNpyFile(fixture("x_2x3.npy"));
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->type(), DataType::kFloat32);
  EXPECT_FLOAT_EQ(t->data<float>()[5], 6.f);
}

TEST(TensorIo, NpyAndPbRoundTrip) {
  Tensor t =
      Tensor::fromVector(DataType::kInt64, {2, 2}, std::vector<int64_t>{-3, 7, 1LL << 40, 0});
  const std::string dir = std::filesystem::temp_directory_path().string();
  ASSERT_TRUE(writeNpyFile(dir + "/kiln_rt.npy", t).isOk());
  ASSERT_TRUE(writeTensorProtoFile(dir + "/kiln_rt.pb", t, "t").isOk());
  for (const char* file : {"/kiln_rt.npy", "/kiln_rt.pb"}) {
    auto back = readTensorFile(dir + file);
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(back->shape(), t.shape());
    EXPECT_EQ(back->toInt64Vector(), t.toInt64Vector());
  }
}

TEST(TensorIo, RejectsNonNpy) {
  auto t = readNpyFile(fixture("random_bytes.onnx"));
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find("random_bytes.onnx"), std::string::npos);
}

TEST(DataTypes, HalfAndBFloat16RoundTrip) {
  for (float v : {0.f, 1.f, -2.5f, 65504.f, 6.1e-5f, 1e-7f}) {
    EXPECT_NEAR(halfToFloat(floatToHalf(v)), v, std::fabs(v) * 1e-3 + 6e-8) << v;
    EXPECT_NEAR(bfloat16ToFloat(floatToBFloat16(v)), v, std::fabs(v) * 1e-2) << v;
  }
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);  // overflow to infinity
  EXPECT_EQ(fp8E4M3ToFloat(floatToFp8E4M3(448.f)), 448.f);
  EXPECT_EQ(fp8E4M3ToFloat(floatToFp8E4M3(1000.f)), 448.f);  // saturates
}

TEST(Cast, FollowsOnnxRules) {
  Tensor f =
      Tensor::fromVector(DataType::kFloat32, {4}, std::vector<float>{-1.7f, 2.9f, 0.f, 300.f});
  Tensor i = castTensor(f, DataType::kInt32);
  EXPECT_EQ(i.toInt64Vector(), (std::vector<int64_t>{-1, 2, 0, 300}));
  Tensor b = castTensor(f, DataType::kBool);
  EXPECT_EQ(b.toInt64Vector(), (std::vector<int64_t>{1, 1, 0, 1}));
  Tensor s = castTensor(f, DataType::kString);
  EXPECT_EQ(s.strings()[1], "2.9");
}

// Weights narrowed to float16 / bfloat16 keep finite values finite: float32's lowest (a mask
// fill) becomes the largest finite value of its sign; infinities, NaN and in-range values
// are castTensor's.
TEST(Cast, SaturatingNarrowingKeepsFiniteValuesFinite) {
  const float lowest = std::numeric_limits<float>::lowest();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor f = Tensor::fromVector(DataType::kFloat32, {6},
                                std::vector<float>{lowest, 1e6f, -inf, nan, -2.5f, 65504.f});
  int64_t held = -1;
  Tensor h = castTensorSaturating(f, DataType::kFloat16, &held);
  EXPECT_EQ(held, 2);
  const uint16_t* hb = h.data<uint16_t>();
  EXPECT_EQ(hb[0], 0xfbff);  // -65504
  EXPECT_EQ(hb[1], 0x7bff);  // 65504
  EXPECT_EQ(hb[2], 0xfc00);  // -inf stays
  EXPECT_TRUE(std::isnan(halfToFloat(hb[3])));
  EXPECT_EQ(halfToFloat(hb[4]), -2.5f);
  EXPECT_EQ(halfToFloat(hb[5]), 65504.f);
  EXPECT_EQ(castTensor(f, DataType::kFloat16).data<uint16_t>()[0], 0xfc00);  // plain Cast
  Tensor b = castTensorSaturating(f, DataType::kBFloat16, &held);
  EXPECT_EQ(held, 1);  // float32's lowest rounds past bfloat16's; 1e6 is in range
  EXPECT_EQ(b.data<uint16_t>()[0], 0xff7f);
  EXPECT_EQ(bfloat16ToFloat(b.data<uint16_t>()[0]), -0x1.fep127f);
  EXPECT_EQ(b.data<uint16_t>()[2], 0xff80);
  Tensor same = castTensorSaturating(f, DataType::kFloat32, &held);
  EXPECT_EQ(held, 0);
  EXPECT_EQ(same.data<float>()[0], lowest);
}

}  // namespace
}  // namespace kiln
