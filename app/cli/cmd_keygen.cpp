// `kiln keygen -o NAME`: an Ed25519 key pair for signing plans (NAME.key, NAME.pub),
// and the global `--trust KEYS` option that makes every plan-loading command require
// signed plans (docs/security.md).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/plan_signature.h"

namespace kiln::cli {

const char kKeygenUsage[] =
    "usage: kiln keygen -o NAME\n"
    "  Writes NAME.key (Ed25519 private key, PEM, mode 0600) and NAME.pub (public\n"
    "  key). Sign plans with `kiln build --sign NAME.key`; require signatures with\n"
    "  `kiln --trust NAME.pub run PLAN.kiln` (any command that loads plans).\n";

int runKeygen(const std::vector<std::string>& argv) {
  std::vector<std::string> expanded = argv;
  for (std::string& a : expanded)
    if (a == "-o") a = "--output";
  Args args({"output"}, {});
  if (Status s = args.parse(expanded); !s.isOk()) return fail("keygen", s.message(), 2);
  if (!args.has("output") || !args.positional().empty()) return printUsage(kKeygenUsage, 2);
  const std::string name = args.value("output");
  if (Status s = generateSigningKeyPair(name + ".key", name + ".pub"); !s.isOk())
    return fail("keygen", s.message());
  std::printf("private key: %s.key (keep it secret)\npublic key:  %s.pub\n", name.c_str(),
              name.c_str());
  return 0;
}

bool applyTrustOption(std::vector<std::string>* args) {
  std::vector<std::string> lists, keys;
  Status status = takeGlobalOption(args, "trust", &lists);
  for (const std::string& list : lists)
    for (const std::string& key : splitList(list)) keys.push_back(key);
  if (status.isOk() && !lists.empty() && keys.empty())
    status = invalidArgument("--trust needs public key files");
  if (status.isOk() && !keys.empty()) status = requirePlanSignatures(keys).withContext("--trust");
  if (!status.isOk()) std::fprintf(stderr, "kiln: %s\n", status.message().c_str());
  return status.isOk();
}

}  // namespace kiln::cli
