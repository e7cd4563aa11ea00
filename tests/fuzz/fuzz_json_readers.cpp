// Fuzz target: every reader of JSON (and text) documents a user brings. The first
// byte picks the reader, the rest is the file:
//   0  trtexec --exportLayerInfo graph   (inspector::reportFromTrtexec, then the
//      report printed as table, CSV and JSON, as `kiln inspect` does)
//   1  graph, a NUL byte, then a --exportProfile document applied to it
//   2  precision constraints file        (loadPrecisionConstraints)
//   3  timing cache                      (TimingCache::load)
//   4  tactics file                      (TacticReplay::load)
//   5  INT8 calibration cache            (loadCalibrationCache)
// Every public entry point takes a path, so the bytes go through scratch files.
#include <cstdint>
#include <string>

#include "engine_report.h"
#include "fuzz_support.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/constraints_file.h"
#include "kiln/timing_cache.h"

namespace {

constexpr int kReaders = 6;

void readTrtexec(const std::string& graphPath, const std::string& profilePath) {
  auto report = kiln::inspector::reportFromTrtexec(graphPath, profilePath);
  if (!report.isOk()) return;
  (void)kiln::inspector::formatReportTable(report.value());
  (void)kiln::inspector::reportCsv(report.value());
  // As the CLI prints it: names may hold any bytes, so invalid UTF-8 is replaced.
  (void)kiln::inspector::reportJson(report.value())
      .dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void readGraphAndProfile(const uint8_t* data, size_t size) {
  size_t split = 0;
  while (split < size && data[split] != 0) ++split;
  const std::string graph = kiln::fuzz::writeScratchFile(data, split, ".graph.json");
  const size_t rest = split < size ? split + 1 : size;
  const std::string profile =
      kiln::fuzz::writeScratchFile(data + rest, size - rest, ".profile.json");
  readTrtexec(graph, profile);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int reader = data[0] % kReaders;
  ++data;
  --size;
  if (reader == 1) {
    readGraphAndProfile(data, size);
    return 0;
  }
  const std::string path = kiln::fuzz::writeScratchFile(data, size, ".json");
  switch (reader) {
    case 0:
      readTrtexec(path, "");
      break;
    case 2:
      (void)kiln::loadPrecisionConstraints(path);
      break;
    case 3: {
      auto cache = kiln::TimingCache::load(path);
      if (cache.isOk()) (void)cache.value().lookup("");
      break;
    }
    case 4:
      (void)kiln::TacticReplay::load(path);
      break;
    default: {
      auto table = kiln::loadCalibrationCache(path);
      if (table.isOk()) (void)kiln::formatCalibrationCache(table.value());
    }
  }
  return 0;
}
