// Measured device peaks (inspector/measured_peaks.h): the file round trip, a malformed
// file named in its error, and peaksForDevice() preferring a measurement to the vendor
// table, with FP16/INT8 falling back to FP32 where a CPU calibration measured none and to
// the vendor table where a GPU calibration did, the peaks' source saying which is which.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "measured_peaks.h"

namespace kiln::inspector {
namespace {

class MeasuredPeaksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_path = (std::filesystem::temp_directory_path() /
              ("kiln_peaks_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name()) /
              "peaks.json")
                 .string();
    setenv("KILN_DEVICE_PEAKS", m_path.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("KILN_DEVICE_PEAKS");
    std::filesystem::remove_all(std::filesystem::path(m_path).parent_path());
  }
  static MeasuredPeaks measured(const std::string& name, double flops, double bytes) {
    MeasuredPeaks m;
    m.peaks.name = name;
    m.peaks.fp32Flops = flops;
    m.peaks.dramBytesPerSecond = bytes;
    m.date = "2026-11-29";
    m.method = "test";
    return m;
  }
  std::string m_path;
};

TEST_F(MeasuredPeaksTest, SavedEntriesAreMergedByNameAndReadBack) {
  EXPECT_EQ(measuredPeaksPath(), m_path);
  EXPECT_TRUE(loadMeasuredPeaks(m_path)->empty());  // no file yet: nothing measured
  ASSERT_TRUE(saveMeasuredPeaks(measured("AMD EPYC", 6e10, 2e10), m_path).isOk());
  ASSERT_TRUE(saveMeasuredPeaks(measured("Intel Xeon", 1e11, 3e10), m_path).isOk());
  ASSERT_TRUE(saveMeasuredPeaks(measured("AMD EPYC", 7e10, 2.5e10), m_path).isOk());
  auto loaded = loadMeasuredPeaks(m_path);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_DOUBLE_EQ(loaded->at("AMD EPYC").peaks.fp32Flops, 7e10);  // replaced
  EXPECT_DOUBLE_EQ(loaded->at("Intel Xeon").peaks.dramBytesPerSecond, 3e10);
  EXPECT_EQ(loaded->at("AMD EPYC").date, "2026-11-29");
}

TEST_F(MeasuredPeaksTest, AMalformedFileIsAnErrorNamingIt) {
  std::filesystem::create_directories(std::filesystem::path(m_path).parent_path());
  std::ofstream(m_path) << R"({"devices": {"x": {"fp32_flops": "fast"}}})";
  auto loaded = loadMeasuredPeaks(m_path);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find(m_path), std::string::npos);
  EXPECT_FALSE(measuredPeaksFor("x").has_value());  // the roofline then has no peaks
  EXPECT_FALSE(saveMeasuredPeaks(measured("y", 1, 1), m_path).isOk());  // not overwritten
}

TEST_F(MeasuredPeaksTest, PeaksForDevicePrefersTheMeasurement) {
  EXPECT_FALSE(peaksForDevice("AMD EPYC").has_value());
  const double tableFp32 = peaksForDevice("NVIDIA H200")->fp32Flops;
  ASSERT_TRUE(saveMeasuredPeaks(measured("AMD EPYC", 6e10, 2e10), m_path).isOk());
  MeasuredPeaks h200 = measured("NVIDIA H200", 5.5e13, 4.3e12);
  h200.peaks.fp16Flops = 7.9e14;
  ASSERT_TRUE(saveMeasuredPeaks(h200, m_path).isOk());
  auto cpu = peaksForDevice("amd epyc");  // names compare case-insensitively
  ASSERT_TRUE(cpu.has_value());
  EXPECT_DOUBLE_EQ(cpu->fp32Flops, 6e10);
  EXPECT_DOUBLE_EQ(cpu->computePeak("FP16"), 6e10);  // not measured: FP32's
  EXPECT_DOUBLE_EQ(cpu->computePeak("INT8"), 6e10);
  auto gpu = peaksForDevice("NVIDIA H200");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_NE(gpu->fp32Flops, tableFp32);
  EXPECT_DOUBLE_EQ(gpu->computePeak("FP16"), 7.9e14);
  EXPECT_DOUBLE_EQ(gpu->dramBytesPerSecond, 4.3e12);
  // The GPU calibration measures no INT8: the vendor table's, and the source says so.
  EXPECT_DOUBLE_EQ(gpu->int8Ops, 1979e12);
  EXPECT_EQ(gpu->source, "measured 2026-11-29 (test); INT8 from the vendor datasheet");
  EXPECT_EQ(cpu->source, "measured 2026-11-29 (test)");  // no vendor entry to borrow from
  EXPECT_EQ(peaksForDevice("H100 SXM")->source, "vendor datasheet, dense");
}

}  // namespace
}  // namespace kiln::inspector
