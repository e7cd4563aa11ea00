// Device peaks measured on this machine (`kiln device --calibrate`), stored per device
// name in a JSON file and preferred over the vendor table by peaksForDevice()
// (roofline.h), so `kiln inspect --roofline`, `kiln advise` and the studio use them.
// File: {"devices": {NAME: {"fp32_flops", "fp16_flops", "int8_ops",
// "dram_bytes_per_second", "date", "method"}}}. No Qt.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "kiln/status.h"
#include "roofline.h"

namespace kiln::inspector {

struct MeasuredPeaks {
  DevicePeaks peaks;   // name = the device name the plans record; 0 where not measured
  std::string date;    // "2026-11-29"
  std::string method;  // how, in words ("OpenBLAS sgemm 2048^3, memcpy 256 MiB")
};

// KILN_DEVICE_PEAKS when set, else $XDG_CONFIG_HOME/kiln/device_peaks.json, else
// ~/.config/kiln/device_peaks.json.
std::string measuredPeaksPath();
// The file's entries by device name; a missing file is an empty map; a malformed one is
// an error naming the file.
Result<std::map<std::string, MeasuredPeaks>> loadMeasuredPeaks(const std::string& path);
// Adds or replaces `measured`'s entry (by its name), writing the file atomically
// (folders made as needed).
Status saveMeasuredPeaks(const MeasuredPeaks& measured, const std::string& path);
// The entry for `deviceName` (exact name, case-insensitive) in measuredPeaksPath(),
// reread when the file changes; nullopt when none, or when the file cannot be read.
std::optional<MeasuredPeaks> measuredPeaksFor(const std::string& deviceName);

}  // namespace kiln::inspector
