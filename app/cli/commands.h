// Entry points of the `kiln` subcommands and their usage texts, the columns of the
// command table (cli/command_table.h), which is the only place that lists them. Each
// run function takes the arguments after its name and returns the process exit code
// (0 ok, 1 failure, 2 usage error).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/tensor.h"

namespace kiln::cli {

class Args;

int runInspect(const std::vector<std::string>& args);
int runBuild(const std::vector<std::string>& args);
int runRun(const std::vector<std::string>& args);
int runConformance(const std::vector<std::string>& args);
int runOps(const std::vector<std::string>& args);
int runPlugins(const std::vector<std::string>& args);
int runCompare(const std::vector<std::string>& args);
int runDebug(const std::vector<std::string>& args);
int runCalibrate(const std::vector<std::string>& args);
int runKeygen(const std::vector<std::string>& args);
int runAdvise(const std::vector<std::string>& args);
int runDevice(const std::vector<std::string>& args);
int runExportOnnx(const std::vector<std::string>& args);
int runSweep(const std::vector<std::string>& args);

// What `kiln NAME --help` prints: "usage: kiln NAME ..." lines, then the options and
// their defaults. Each is defined beside the options its command parses.
extern const char kInspectUsage[];
extern const char kBuildUsage[];
extern const char kRunUsage[];
extern const char kConformanceUsage[];
extern const char kOpsUsage[];
extern const char kPluginsUsage[];
extern const char kCompareUsage[];
extern const char kDebugUsage[];
extern const char kCalibrateUsage[];
extern const char kKeygenUsage[];
extern const char kAdviseUsage[];
extern const char kDeviceUsage[];
extern const char kExportOnnxUsage[];
extern const char kSweepUsage[];

// Prints a usage text to stdout and returns `exitCode` (0 when asked for, 2 after a
// usage error).
int printUsage(std::string_view usage, int exitCode);

// Takes every `--trust KEYS` / `--trust=KEYS` out of `args` and requires plans loaded
// from then on to be signed by one of those public keys (kiln/plan_signature.h).
// False (after saying why) when a key does not load.
bool applyTrustOption(std::vector<std::string>* args);

// The CUDA path of `kiln run` (trtexec-style benchmark), after inputs are prepared.
// With a plan, its engine precision and TF32 setting replace --fp16/--bf16/--no-tf32.
int runOnCuda(const Args& args, std::shared_ptr<Network> network,
              const std::map<std::string, Tensor>& inputs, int64_t iterations, double warmupMs,
              const Plan* plan = nullptr);

// Prints "kiln <command>: <message>" to stderr and returns `code`.
int fail(const std::string& command, const std::string& message, int code = 1);

// Prints a report to stdout with every control character but its line breaks
// escaped: the names in tables come from models and plans, and must not drive the
// terminal.
void printReportText(const std::string& text);

}  // namespace kiln::cli
