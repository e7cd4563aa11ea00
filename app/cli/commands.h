// Entry points of the `kiln` subcommands. Each takes the arguments after its
// name and returns the process exit code (0 ok, 1 failure, 2 usage error).
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

int runInspect(const std::vector<std::string>& args);
int runRun(const std::vector<std::string>& args);
int runConformance(const std::vector<std::string>& args);
int runOps(const std::vector<std::string>& args);

// Prints "kiln <command>: <message>" to stderr and returns `code`.
int fail(const std::string& command, const std::string& message, int code = 1);

}  // namespace kiln::cli
