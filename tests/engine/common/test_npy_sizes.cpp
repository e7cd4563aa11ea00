// .npy headers that lie about sizes: checked before anything is allocated.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "kiln/tensor_io.h"
#include "support/hostile_models.h"

namespace kiln {
namespace {

using namespace test::hostile;
using NpySizes = FixedLimitsTest;

std::string writeTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST_F(NpySizes, HeaderDimsThatWrapAreRefused) {
  // 3 x 6148914691236517206 float32 "needed" 8 bytes unchecked: 8 bytes were accepted.
  const std::string path = writeTemp("wrapped.npy", npyBytes("<f4", {3, kWrapsToTwo}, 8));
  auto t = readNpyFile(path);
  ASSERT_FALSE(t.isOk());
  EXPECT_EQ(t.status().message(), path +
                                      ": .npy shape: dim 1 (6148914691236517206) exceeds the "
                                      "limit of 1099511627776");
  std::remove(path.c_str());
}

TEST_F(NpySizes, HugeClaimsAreRefusedBeforeAllocating) {
  const std::string path =
      writeTemp("huge.npy", npyBytes("<f8", {int64_t{1} << 20, int64_t{1} << 20}, 16));
  auto t = readNpyFile(path);
  ASSERT_FALSE(t.isOk());
  EXPECT_NE(t.status().message().find("needs more than the limit"), std::string::npos)
      << t.status().message();
  std::remove(path.c_str());
}

TEST_F(NpySizes, HonestFilesStillRead) {
  std::string bytes = npyBytes("<f4", {2}, 0);
  const float values[2] = {1.5f, -2.f};
  bytes.append(reinterpret_cast<const char*>(values), sizeof(values));
  const std::string path = writeTemp("ok.npy", bytes);
  auto t = readNpyFile(path);
  ASSERT_TRUE(t.isOk()) << t.status().toString();
  EXPECT_FLOAT_EQ(t->data<float>()[1], -2.f);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln
