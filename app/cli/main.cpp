// kiln: the command line of the Kiln inference-engine builder.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/args.h"
#include "cli/command_table.h"
#include "cli/commands.h"
#include "cli/exception_barrier.h"
#include "cli/remote.h"
#include "kiln/plugin_registry.h"

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

int guardedMain(int argc, char** argv) {
  std::vector<std::string> all(argv + 1, argv + argc);
  std::vector<std::string> remote;
  if (kiln::Status s = kiln::cli::takeGlobalOption(&all, "remote", &remote); !s.isOk())
    return std::fprintf(stderr, "kiln: %s\n", s.message().c_str()), 2;
  if (!remote.empty()) return kiln::cli::runRemote(remote.back(), all);
  if (!loadPluginOptions(&all) || !kiln::cli::applyTrustOption(&all)) return 1;
  if (all.empty()) {
    std::fputs(kiln::cli::mainHelpText().c_str(), stdout);
    return 2;
  }
  const std::string command = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  // Per command, so the one line names the command and the file it was reading.
  return kiln::cli::runBehindBarrier(command, args,
                                     [&] { return kiln::cli::dispatchCommand(command, args); });
}

}  // namespace

int main(int argc, char** argv) {
  // The outer barrier covers what runs before a command (plugin loading).
  return kiln::cli::runBehindBarrier("", {}, [&] { return guardedMain(argc, argv); });
}
