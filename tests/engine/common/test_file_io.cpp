// kiln/file_io.h: only regular files are read (checked on the opened descriptor, a
// FIFO never blocks), reads are capped, and writes never follow a planted link.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "kiln/file_io.h"

namespace kiln {
namespace {
namespace fs = std::filesystem;

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("kiln_file_io_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path m_dir;
};

TEST_F(FileIoTest, ReadsARegularFileWhole) {
  write("a.txt", std::string("ab\0cd", 5));
  Result<std::string> bytes = readRegularFile(path("a.txt"), 100);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().message();
  EXPECT_EQ(bytes.value(), std::string("ab\0cd", 5));
}

TEST_F(FileIoTest, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo(path("f").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> bytes = readRegularFile(path("f"), 100);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().message(), path("f") + ": is a FIFO, not a regular file");
  EXPECT_FALSE(regularFileSize(path("f")).isOk());
  EXPECT_FALSE(readRegularFileRange(path("f"), 0, 1).isOk());
}

TEST_F(FileIoTest, RefusesDirectoriesAndDevices) {
  fs::create_directories(path("d"));
  Result<std::string> dir = readRegularFile(path("d"), 100);
  ASSERT_FALSE(dir.isOk());
  EXPECT_EQ(dir.status().message(), path("d") + ": is a directory, not a regular file");
  Result<std::string> zero = readRegularFile("/dev/zero", 100);
  ASSERT_FALSE(zero.isOk());
  EXPECT_EQ(zero.status().message(), "/dev/zero: is a character device, not a regular file");
}

TEST_F(FileIoTest, MissingFileIsNotFound) {
  Result<std::string> bytes = readRegularFile(path("nope"), 100);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bytes.status().message(), path("nope") + ": cannot open");
}

TEST_F(FileIoTest, CapsTheSizeBeforeReading) {
  write("big", "");
  fs::resize_file(path("big"), int64_t{1} << 40);  // sparse: no disk used
  Result<std::string> bytes = readRegularFile(path("big"), 1 << 20);
  ASSERT_FALSE(bytes.isOk());
  EXPECT_EQ(bytes.status().message(),
            path("big") + ": 1099511627776 bytes, more than the 1048576 allowed");
}

TEST_F(FileIoTest, RangeReadsOnlyWhatIsDeclared) {
  write("w.bin", "0123456789");
  fs::resize_file(path("w.bin"), int64_t{1} << 40);
  Result<std::string> bytes = readRegularFileRange(path("w.bin"), 2, 5);
  ASSERT_TRUE(bytes.isOk()) << bytes.status().message();
  EXPECT_EQ(bytes.value(), "23456");
  Result<std::string> outside = readRegularFileRange(path("w.bin"), int64_t{1} << 40, 1);
  ASSERT_FALSE(outside.isOk());
  EXPECT_NE(outside.status().message().find("lies outside the file (1099511627776 bytes)"),
            std::string::npos)
      << outside.status().message();
  EXPECT_FALSE(readRegularFileRange(path("w.bin"), -1, 1).isOk());
}

TEST_F(FileIoTest, AtomicWriteReplacesTheTarget) {
  write("out", "old");
  ASSERT_TRUE(writeFileAtomically(path("out"), "new", "the test file").isOk());
  EXPECT_EQ(slurp(path("out")), "new");
  for (const auto& entry : fs::directory_iterator(m_dir))  // no temporary left behind
    EXPECT_EQ(entry.path().filename(), "out");
}

TEST_F(FileIoTest, AtomicWriteNeverFollowsAPlantedLink) {
  write("victim", "precious");
  fs::create_symlink(path("victim"), path("out.partial"));
  ASSERT_TRUE(writeFileAtomically(path("out"), "plan", "the plan").isOk());
  EXPECT_EQ(slurp(path("victim")), "precious");
  EXPECT_EQ(slurp(path("out")), "plan");
  // A link at the target itself is replaced, not written through.
  fs::create_symlink(path("victim"), path("linked"));
  ASSERT_TRUE(writeFileAtomically(path("linked"), "plan", "the plan").isOk());
  EXPECT_EQ(slurp(path("victim")), "precious");
  EXPECT_FALSE(fs::is_symlink(path("linked")));
}

TEST_F(FileIoTest, AtomicWriteIntoAMissingFolderFailsCleanly) {
  Status s = writeFileAtomically(path("no/such/out"), "x", "the plan");
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().rfind(path("no/such/out") + ": cannot write the plan (", 0), 0u)
      << s.message();
}

}  // namespace
}  // namespace kiln
