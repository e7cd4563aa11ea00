// kiln: the command line of the Kiln inference-engine builder.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/exception_barrier.h"
#include "cli/remote.h"
#include "kiln/plugin_registry.h"
#include "kiln/version.h"
#include "version_report.h"

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
      "                                                          run on the GPU (CUDA) when one is "
      "usable, else the CPU\n"
      "  compare A.kiln|A.onnx [B] [--per-tensor] [--atol X --rtol Y] [--json]\n"
      "                                                          accuracy of A against B (or the "
      "FP32 reference)\n"
      "  compare --builds P1.kiln P2.kiln [...] [--json]         side-by-side builds aligned by "
      "ONNX "
      "node\n"
      "  debug precision MODEL.onnx --fp16 [--save-constraints F] which ONNX nodes must stay "
      "FP32\n"
      "  debug tactics MODEL.onnx [--layer N] [--rebuilds N]    tactics whose outputs differ\n"
      "  calibrate MODEL.onnx --data DIR -o CACHE [--method entropy|minmax|percentile]\n"
      "                                                          INT8 calibration: a range per "
      "tensor\n"
      "  conformance DIR... [--expected-failures FILE] [--json] run ONNX backend node tests\n"
      "  ops [--json]                                            operators the CPU backend runs\n"
      "  plugins [--json]                                        loaded plugin libraries and "
      "creators\n"
      "  keygen -o NAME                                          Ed25519 key pair to sign plans "
      "(build --sign)\n"
      "  advise PLAN.kiln|GRAPH.json [--profile P.json] [--json] performance lint: findings, "
      "layers, cost, fix\n"
      "  export-onnx MODEL.onnx -o OUT.onnx --from PLAN.kiln|--constraints F|--calib-cache C\n"
      "                                                          strongly typed ONNX (fp16 "
      "regions + Casts, or INT8 Q/DQ) for TensorRT 11\n"
      "  sweep MODEL.onnx --vary precision=fp32,fp16 --max-error cosine>=0.999 [--slurm]\n"
      "                                                          build, check and time every "
      "configuration: log, Pareto front\n"
      "  --version                                               release, git commit, CUDA/"
      "cuDNN built with and found\n\n"
      "global option: --plugins LIB.so[,LIB.so]  load plugin libraries (custom layers) first\n"
      "global option: --trust KEY.pub[,KEY.pub]  load only plans signed by these keys (unsigned\n"
      "               plans without generated GPU code still load; docs/security.md)\n"
      "global option: --remote [user@]host[:port]  run build|run|compare|calibrate on that host's\n"
      "               kiln over ssh: inputs uploaded (hash-cached), outputs fetched "
      "(docs/scale-out.md)\n"
      "Run `kiln <command> --help` for a command's options.\n");
}

}  // namespace

// Takes every `--plugins LIST` / `--plugins=LIST` out of `args` and loads the
// libraries, before any command sees its arguments. False (after saying why) when
// one does not load.
bool loadPluginOptions(std::vector<std::string>* args) {
  std::vector<std::string> lists;
  kiln::Status status = kiln::cli::takeGlobalOption(args, "plugins", &lists);
  for (size_t i = 0; i < lists.size() && status.isOk(); ++i)
    status = kiln::loadPluginLibraries(lists[i]);
  if (!status.isOk()) std::fprintf(stderr, "kiln: %s\n", status.message().c_str());
  return status.isOk();
}

namespace {

int dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "inspect") return kiln::cli::runInspect(args);
  if (command == "build") return kiln::cli::runBuild(args);
  if (command == "run") return kiln::cli::runRun(args);
  if (command == "conformance") return kiln::cli::runConformance(args);
  if (command == "ops") return kiln::cli::runOps(args);
  if (command == "plugins") return kiln::cli::runPlugins(args);
  if (command == "compare") return kiln::cli::runCompare(args);
  if (command == "debug") return kiln::cli::runDebug(args);
  if (command == "calibrate") return kiln::cli::runCalibrate(args);
  if (command == "keygen") return kiln::cli::runKeygen(args);
  if (command == "advise") return kiln::cli::runAdvise(args);
  if (command == "export-onnx") return kiln::cli::runExportOnnx(args);
  if (command == "sweep") return kiln::cli::runSweep(args);
  if (command == "--version" || command == "version") {
    std::fputs(kiln::app::versionReport("kiln").c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "kiln: unknown command '%s' (try `kiln --help`)\n",
               kiln::escapeControlCharacters(command).c_str());
  return 2;
}

int guardedMain(int argc, char** argv) {
  std::vector<std::string> all(argv + 1, argv + argc);
  std::vector<std::string> remote;
  if (kiln::Status s = kiln::cli::takeGlobalOption(&all, "remote", &remote); !s.isOk())
    return std::fprintf(stderr, "kiln: %s\n", s.message().c_str()), 2;
  if (!remote.empty()) return kiln::cli::runRemote(remote.back(), all);
  if (!loadPluginOptions(&all) || !kiln::cli::applyTrustOption(&all)) return 1;
  if (all.empty() || all[0] == "--help" || all[0] == "-h" || all[0] == "help") {
    printUsage();
    return all.empty() ? 2 : 0;
  }
  const std::string command = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  // Per command, so the one line names the command and the file it was reading.
  return kiln::cli::runBehindBarrier(command, args, [&] { return dispatch(command, args); });
}

}  // namespace

int main(int argc, char** argv) {
  // The outer barrier covers what runs before a command (plugin loading).
  return kiln::cli::runBehindBarrier("", {}, [&] { return guardedMain(argc, argv); });
}
