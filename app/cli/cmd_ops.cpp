// `kiln ops`: the operators the CPU reference backend implements, with opset ranges.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/reference_backend.h"

namespace kiln::cli {

int runOps(const std::vector<std::string>& argv) {
  Args args({}, {"json", "help"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("ops", parsed.message(), 2);
  if (args.flag("help")) {
    std::printf(
        "usage: kiln ops [--json]\n  Lists every operator the CPU reference backend runs, by "
        "domain, with opset ranges.\n");
    return 0;
  }
  std::map<std::string, std::map<std::string, std::vector<std::pair<int, int>>>> byDomain;
  for (const OperatorRange& e : referenceOperators()) {
    byDomain[e.domain.empty() ? "ai.onnx" : e.domain][e.opType].emplace_back(e.sinceVersion,
                                                                             e.untilVersion);
  }
  if (args.flag("json")) {
    nlohmann::json j;
    for (const auto& [domain, ops] : byDomain)
      for (const auto& [op, ranges] : ops)
        for (const auto& [since, until] : ranges)
          j[domain][op].push_back({{"since", since}, {"until", until}});
    std::printf("%s\n", j.dump(1).c_str());
    return 0;
  }
  size_t total = 0;
  for (const auto& [domain, ops] : byDomain) {
    std::printf("%s (%zu ops)\n", domain.c_str(), ops.size());
    total += ops.size();
    for (const auto& [op, ranges] : ops) {
      std::string text;
      for (const auto& [since, until] : ranges)
        text += (text.empty() ? "" : ", ") + std::to_string(since) +
                (until >= 1000 ? "+" : "-" + std::to_string(until));
      std::printf("  %-32s opset %s\n", op.c_str(), text.c_str());
    }
  }
  std::printf("%zu operators\n", total);
  return 0;
}

}  // namespace kiln::cli
