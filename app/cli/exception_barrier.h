// The CLI's exception barrier. libkiln reports errors as Status, but an exception
// can still come out of it or of the CLI's own code: std::bad_alloc or
// std::length_error from a size an input chose, nlohmann's type errors, the size-cap
// exception the Tensor constructor throws as a last line of defence. None of them
// may abort the process.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kiln::cli {

// Runs `body` (one command, given `args`) and returns its exit code; an exception
// that escapes it becomes one line on stderr and exit code 1:
//   "kiln run: model.onnx: out of memory while running the command (std::bad_alloc)"
//   "kiln inspect: g.json: failed: <what>"
// The file named is the command's first argument that exists on disk, if any.
int runBehindBarrier(const std::string& command, const std::vector<std::string>& args,
                     const std::function<int()>& body);

}  // namespace kiln::cli
