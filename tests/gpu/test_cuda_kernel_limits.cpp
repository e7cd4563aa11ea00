// Where the CUDA kernels' host halves send a problem: the pure predicates and sizes of
// data_movement_impl.h (the row-run copy's staging), slice_pad_tile_impl.h (Pad by rows),
// col2im_unpool_impl.h (Col2Im by planes), small_batched_matmul.h and the attention's head
// sizes and shared-memory limit. Host code only: it needs the toolkit's headers, not a
// device, and runs in CI. Each boundary is checked on both sides, so moving one without the
// kernel's contract (and its comment) fails here.
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/ops/col2im_unpool_impl.h"
#include "backends/cuda/ops/data_movement_impl.h"
#include "backends/cuda/ops/fused_attention_impl.h"
#include "backends/cuda/ops/fused_attention_limits.h"
#include "backends/cuda/ops/slice_pad_tile_impl.h"
#include "backends/cuda/ops/small_batched_matmul.h"

namespace kiln::test {
namespace {

using namespace kiln::cuda;

TEST(CudaKernelLimits, RowRunStagingFitsThirtyTwoRowsOrRefuses) {
  // Odd pitches: a warp's rows start in distinct banks.
  EXPECT_EQ(dm::rowRunPitch(14), 15);
  EXPECT_EQ(dm::rowRunPitch(33), 33);
  // 256 rows while they fit 32 KB, then multiples of 32, then none below 32 rows.
  EXPECT_EQ(dm::rowRunRowsPerBlock(14, 2), 256);  // TNT's and VOLO's rows of 14
  EXPECT_EQ(dm::rowRunRowsPerBlock(196, 2), 64);  // 197 x 2 bytes: 83 rows fit
  EXPECT_EQ(dm::rowRunRowsPerBlock(511, 2), 32);  // the longest fp16 row
  EXPECT_EQ(dm::rowRunRowsPerBlock(512, 2), 0);   // pitch 513: 31 rows
  EXPECT_EQ(dm::rowRunRowsPerBlock(255, 4), 32);  // the longest fp32 row
  EXPECT_EQ(dm::rowRunRowsPerBlock(256, 4), 0);
  EXPECT_EQ(dm::rowRunRowsPerBlock(127, 8), 32);
}

TEST(CudaKernelLimits, PadByRowsNeedsStagedRowsOfFourOrMore) {
  dm::PadParams p;
  p.rank = 4;
  p.outDims[0] = 128, p.outDims[1] = 192, p.outDims[2] = 30, p.outDims[3] = 30;
  EXPECT_TRUE(dm::padRowsApply(p, 2));  // VOLO's zero pad
  p.outDims[3] = 3;
  EXPECT_FALSE(dm::padRowsApply(p, 2));  // rows shorter than 4: by element
  p.outDims[3] = 600;
  EXPECT_TRUE(dm::padRowsApply(p, 1));
  EXPECT_FALSE(dm::padRowsApply(p, 4));  // 32 rows of 601 floats do not fit 32 KB
  p.rank = 1;
  p.outDims[0] = 30;
  EXPECT_FALSE(dm::padRowsApply(p, 2));  // one row: nothing to split
}

TEST(CudaKernelLimits, Col2ImByPlanesUpToFortyEightKilobytesOfSums) {
  sm::Col2Im2d g;
  g.height = g.width = 28;  // VOLO's fold
  EXPECT_TRUE(sm::col2ImPlanesApply(g));
  g.height = 96, g.width = 128;  // 12,288 floats: exactly 48 KB
  EXPECT_TRUE(sm::col2ImPlanesApply(g));
  g.width = 129;
  EXPECT_FALSE(sm::col2ImPlanesApply(g));
}

TEST(CudaKernelLimits, SmallBatchedMatMulOnlyForManySmallProducts) {
  EXPECT_TRUE(smallBatchedMatMulApplies(DataType::kFloat16, 150528, 9, 32, 9));  // VOLO
  EXPECT_TRUE(smallBatchedMatMulApplies(DataType::kBFloat16, 2048, 32, 128, 32));
  EXPECT_TRUE(smallBatchedMatMulApplies(DataType::kFloat32, 2048, 1, 1, 1));
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kFloat16, 2047, 9, 32, 9));  // too few
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kFloat16, 4096, 33, 32, 9));
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kFloat16, 4096, 9, 129, 9));
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kFloat16, 4096, 9, 32, 33));
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kInt8, 4096, 9, 32, 9));
  EXPECT_FALSE(smallBatchedMatMulApplies(DataType::kFloat16, int64_t{1} << 24, 32, 128, 9));
}

TEST(CudaKernelLimits, HeadSizesPadTo256TogetherAndNeedTheSharedMemory) {
  const flash::PaddedHeadSizes bert = flash::paddedHeadSizes(64, 64);
  EXPECT_EQ(bert.d, 64);
  EXPECT_EQ(bert.dv, 64);
  const flash::PaddedHeadSizes levit = flash::paddedHeadSizes(16, 64);
  EXPECT_EQ(levit.d, 32);
  EXPECT_EQ(levit.dv, 64);
  for (auto [d, dv] : {std::pair{64, 256}, std::pair{160, 64}, std::pair{256, 256}}) {
    const flash::PaddedHeadSizes wide = flash::paddedHeadSizes(d, dv);
    EXPECT_EQ(wide.d, 256) << d << " " << dv;
    EXPECT_EQ(wide.dv, 256) << d << " " << dv;
  }
  // The tensor-core kernel's shared memory at 256: Q's 64 rows and two K / V stages.
  EXPECT_EQ(kWideHeadSharedBytes, 168960);
  const int64_t h200 = 232448, a100 = 166912, ada = 101376, unknown = -1;
  EXPECT_EQ(fusedAttentionGpuLimits(8, 8, 512, 512, 256, 256, h200), "");
  EXPECT_EQ(fusedAttentionGpuLimits(8, 8, 512, 512, 256, 256, unknown), "");
  EXPECT_EQ(fusedAttentionGpuLimits(8, 8, 512, 512, 128, 128, ada), "");
  const std::string a100Refusal = fusedAttentionGpuLimits(8, 8, 512, 512, 160, 64, a100);
  EXPECT_NE(a100Refusal.find("head size 160 needs 165 KB"), std::string::npos) << a100Refusal;
  EXPECT_NE(fusedAttentionGpuLimits(8, 8, 512, 512, 64, 256, ada).find("head size 256"),
            std::string::npos);
  EXPECT_NE(fusedAttentionGpuLimits(8, 8, 512, 512, 288, 64, h200).find("1..256"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln::test
