#include "cli/exception_barrier.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "kiln/status.h"

namespace kiln::cli {
namespace {

// The input the command was working on: its first argument that names something on
// disk (not opened: a FIFO stays unread).
std::string inputOf(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a.empty() || a[0] == '-') continue;
    std::error_code ec;
    if (std::filesystem::symlink_status(a, ec).type() != std::filesystem::file_type::not_found &&
        !ec)
      return a;
  }
  return "";
}

int report(const std::string& command, const std::vector<std::string>& args,
           const std::string& what) {
  const std::string input = inputOf(args);
  const std::string line = (command.empty() ? "kiln: " : "kiln " + command + ": ") +
                           (input.empty() ? "" : input + ": ") + what;
  std::fprintf(stderr, "%s\n", escapeControlCharacters(line).c_str());
  return 1;
}

}  // namespace

int runBehindBarrier(const std::string& command, const std::vector<std::string>& args,
                     const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return report(command, args,
                  "out of memory while running the command (std::bad_alloc: a size in the "
                  "input is larger than this machine's memory)");
  } catch (const std::length_error& e) {
    return report(command, args,
                  std::string("out of memory while running the command (std::length_error: ") +
                      e.what() + ")");
  } catch (const std::exception& e) {
    return report(command, args, std::string("failed: ") + e.what());
  } catch (...) {
    return report(command, args, "failed: an unknown exception");
  }
}

}  // namespace kiln::cli
