// kiln: the command line of the Kiln inference-engine builder.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "kiln/version.h"

namespace {

void printUsage() {
  std::printf(
      "usage: kiln <command> [options]\n\n"
      "commands:\n"
      "  inspect MODEL.onnx [--shapes n:1x3x224x224] [--json]   model summary: I/O, opsets, ops, "
      "params, FLOPs\n"
      "  inspect PLAN.kiln [--layers] [--json]                  engine inspector: layers, "
      "precisions, tactics\n"
      "  inspect GRAPH.json [--profile P.json] [--csv F] [--json] trtexec export: layers, "
      "precisions, times\n"
      "  build MODEL.onnx -o PLAN.kiln [--fp16] [...]           build a plan: timed tactics, "
      "precisions, profiles\n"
      "  run MODEL.onnx|PLAN.kiln [--shapes ...] [--load-inputs n:f.npy] [--iterations N] "
      "[--export-output "
      "f.json] [--json]\n"
      "                                                          run on the CPU reference backend\n"
      "  conformance DIR... [--expected-failures FILE] [--json] run ONNX backend node tests\n"
      "  ops [--json]                                            operators the CPU backend runs\n\n"
      "Run `kiln <command> --help` for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    printUsage();
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "inspect") return kiln::cli::runInspect(args);
  if (command == "build") return kiln::cli::runBuild(args);
  if (command == "run") return kiln::cli::runRun(args);
  if (command == "conformance") return kiln::cli::runConformance(args);
  if (command == "ops") return kiln::cli::runOps(args);
  if (command == "--version" || command == "version") {
    std::printf("kiln %s\n", kiln::kKilnVersion);
    return 0;
  }
  std::fprintf(stderr, "kiln: unknown command '%s' (try `kiln --help`)\n", command.c_str());
  return 2;
}
