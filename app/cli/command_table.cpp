#include "cli/command_table.h"

#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "kiln/status.h"
#include "version_report.h"

namespace kiln::cli {
namespace {

const char kHelpUsage[] =
    "usage: kiln help [COMMAND]\n"
    "  Without COMMAND: every command with its summary, and the global options.\n"
    "  With COMMAND: its usage and options (the same as `kiln COMMAND --help`).\n";

const char kVersionUsage[] =
    "usage: kiln --version | kiln version\n"
    "  The release and the git commit it was built from, the CUDA, cuDNN and cuBLASLt\n"
    "  versions it was built against, and what it finds at run time: the GPU, its driver\n"
    "  and libraries, or why no GPU is usable.\n";

int unknownCommand(const std::string& word) {
  std::fprintf(stderr, "kiln: unknown command '%s' (try `kiln --help`)\n",
               escapeControlCharacters(word).c_str());
  return 2;
}

int runHelp(const std::vector<std::string>& args) {
  if (args.size() > 1) return printUsage(kHelpUsage, 2);
  if (args.empty()) {
    std::fputs(mainHelpText().c_str(), stdout);
    return 0;
  }
  const Command* command = findCommand(args[0]);
  return command ? printUsage(command->usage, 0) : unknownCommand(args[0]);
}

int runVersion(const std::vector<std::string>& args) {
  if (!args.empty()) return printUsage(kVersionUsage, 2);
  std::fputs(kiln::app::versionReport("kiln").c_str(), stdout);
  return 0;
}

}  // namespace

const std::vector<Command>& commandTable() {
  // The order is `kiln --help`'s: a model's way from inspection to a checked, tuned
  // plan, then the tools, then help itself. README.md's command table has the same rows.
  // A row a command: name, aliases, summary; then its usage and run function.
  // clang-format off
  static const std::vector<Command> table = {
      {"inspect", {}, "a model's summary, a plan's engine inspector, a trtexec export's layers",
       kInspectUsage, runInspect},
      {"build", {}, "build a plan: passes, precisions, timed tactics, profiles, memory plan",
       kBuildUsage, runBuild},
      {"run", {}, "run and time a model or plan: on CUDA when a GPU is usable, else the CPU",
       kRunUsage, runRun},
      {"compare", {}, "accuracy against another engine or the FP32 reference; builds side by side",
       kCompareUsage, runCompare},
      {"debug", {}, "the layers that must stay FP32; the tactics whose outputs differ",
       kDebugUsage, runDebug},
      {"calibrate", {}, "INT8 calibration, on the GPU when usable: a range per tensor, editable",
       kCalibrateUsage, runCalibrate},
      {"export-onnx", {}, "a strongly typed ONNX for TensorRT 11: fp16 regions + Casts, or Q/DQ",
       kExportOnnxUsage, runExportOnnx},
      {"advise", {}, "performance lint of a plan or trtexec export: findings, layers, fix",
       kAdviseUsage, runAdvise},
      {"sweep", {}, "build, check and time every configuration of --vary lists: Pareto front",
       kSweepUsage, runSweep},
      {"device", {}, "this machine's devices and the roofline's peaks; --calibrate measures the CPU",
       kDeviceUsage, runDevice},
      {"conformance", {}, "run ONNX backend tests: pass, fail or unsupported per test",
       kConformanceUsage, runConformance},
      {"ops", {}, "the operators the CPU reference runs, and which have a CUDA kernel",
       kOpsUsage, runOps},
      {"plugins", {}, "the loaded plugin libraries and their creators",
       kPluginsUsage, runPlugins},
      {"keygen", {}, "an Ed25519 key pair to sign plans (build --sign, --trust)",
       kKeygenUsage, runKeygen},
      {"help", {"--help", "-h"}, "the command list, or a command's usage and options",
       kHelpUsage, runHelp},
      {"version", {"--version"}, "release, git commit, CUDA/cuDNN built with and found at run time",
       kVersionUsage, runVersion},
  };
  // clang-format on
  return table;
}

const Command* findCommand(std::string_view word) {
  for (const Command& command : commandTable()) {
    if (command.name == word) return &command;
    if (std::find(command.aliases.begin(), command.aliases.end(), word) != command.aliases.end())
      return &command;
  }
  return nullptr;
}

std::string mainHelpText() {
  std::string text = "usage: kiln [global options] <command> [options]\n\ncommands:\n";
  for (const Command& command : commandTable()) {
    std::string name(command.name);
    name.resize(std::max<size_t>(name.size() + 2, 14), ' ');
    text += "  " + name + std::string(command.summary) + "\n";
  }
  return text +
         "\n"
         "global option: --plugins LIB.so[,LIB.so]  load plugin libraries (custom layers) first\n"
         "global option: --trust KEY.pub[,KEY.pub]  load only plans signed by these keys "
         "(unsigned\n"
         "               plans without generated GPU code still load; docs/security.md)\n"
         "global option: --remote [user@]host[:port]  run build|run|compare|calibrate on that "
         "host's\n"
         "               kiln over ssh: inputs uploaded (hash-cached), outputs fetched "
         "(docs/scale-out.md)\n"
         "Run `kiln help COMMAND` or `kiln COMMAND --help` for a command's usage and options.\n";
}

int dispatchCommand(const std::string& word, const std::vector<std::string>& args) {
  const Command* command = findCommand(word);
  if (!command) return unknownCommand(word);
  if (std::find(args.begin(), args.end(), "--help") != args.end())
    return printUsage(command->usage, 0);
  return command->run(args);
}

int printUsage(std::string_view usage, int exitCode) {
  std::fwrite(usage.data(), 1, usage.size(), stdout);
  return exitCode;
}

}  // namespace kiln::cli
