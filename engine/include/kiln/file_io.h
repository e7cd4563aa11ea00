// Files as untrusted input and output. Reads accept only regular files, checked on
// the opened descriptor (a FIFO, device or directory is refused, and opening one
// never blocks), and never read more than the caller's cap. Writes go to a fresh
// temporary name created exclusively without following links, then are renamed over
// the target, so a link planted beside the target is never written through.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/status.h"

namespace kiln {

// Caps on whole-file reads, by kind of file.
constexpr int64_t kMaxModelFileBytes = int64_t{2} << 30;  // protobuf's own limit
constexpr int64_t kMaxPlanFileBytes = int64_t{64} << 30;
constexpr int64_t kMaxTensorFileBytes = int64_t{64} << 30;  // .npy / .pb inputs
constexpr int64_t kMaxTextFileBytes = int64_t{1} << 30;     // JSON, caches, specs

// The whole regular file at `path`, at most `maxBytes` long. Errors start with
// `path`: "x.npy: is a FIFO, not a regular file", "x.json: 3221225472 bytes, more
// than the 1073741824 allowed"; a missing file is kNotFound ("x: cannot open (No
// such file or directory)").
Result<std::string> readRegularFile(const std::string& path, int64_t maxBytes);

// `length` bytes at `offset` of the regular file at `path`; kParseError when the
// range lies outside the file (so a sparse or huge file is read only as far as
// the caller declares, and a short file is an error, not a short read).
Result<std::string> readRegularFileRange(const std::string& path, int64_t offset, int64_t length);

// The size of the regular file at `path` (same checks as readRegularFile).
Result<int64_t> regularFileSize(const std::string& path);

// Writes `bytes` to `path`: to a new file beside it (O_CREAT | O_EXCL |
// O_NOFOLLOW, a name no one can predict), then renamed over `path`. A failed
// write leaves `path` as it was. `what` names the file in errors ("the plan").
Status writeFileAtomically(const std::string& path, const std::string& bytes,
                           const std::string& what);

}  // namespace kiln
