// `kiln ops`: the operators the CPU reference backend implements, with opset ranges.
#include <cstdio>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/cuda_runtime.h"
#include "kiln/op_table.h"
#include "kiln/reference_backend.h"

namespace kiln::cli {

const char kOpsUsage[] =
    "usage: kiln ops [--json]\n"
    "  Lists every operator the CPU reference backend runs, by domain, with opset ranges,\n"
    "  whether the CUDA backend has a kernel for it (others run on the GPU engine through\n"
    "  the host fallback), and from the op table its kind and TensorRT's layer type.\n";

int runOps(const std::vector<std::string>& argv) {
  Args args({}, {"json"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("ops", parsed.message(), 2);
  if (!args.positional().empty()) return printUsage(kOpsUsage, 2);
  std::map<std::string, std::map<std::string, std::vector<std::pair<int, int>>>> byDomain;
  for (const OperatorRange& e : referenceOperators()) {
    byDomain[e.domain.empty() ? "ai.onnx" : e.domain][e.opType].emplace_back(e.sinceVersion,
                                                                             e.untilVersion);
  }
  std::map<std::string, std::set<std::string>> onGpu;
  for (const cuda::GpuOperator& e : cuda::gpuOperators())
    onGpu[e.domain.empty() ? "ai.onnx" : e.domain].insert(e.opType);
  auto hasGpu = [&](const std::string& domain, const std::string& op) {
    auto it = onGpu.find(domain);
    return it != onGpu.end() && it->second.count(op) > 0;
  };
  if (args.flag("json")) {
    nlohmann::json j;
    for (const auto& [domain, ops] : byDomain)
      for (const auto& [op, ranges] : ops)
        for (const auto& [since, until] : ranges) {
          nlohmann::json entry = {{"since", since}, {"until", until}, {"cuda", hasGpu(domain, op)}};
          if (const ops::OpRow* row = ops::findOp(op)) {
            entry["kind"] = std::string(ops::opKindName(row->kind));
            entry["tensorrt_layer"] = std::string(row->tensorrtLayer);
            entry["positionwise"] = row->positionwise;
          }
          j[domain][op].push_back(entry);
        }
    std::printf("%s\n", j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  size_t total = 0, gpu = 0;
  for (const auto& [domain, ops] : byDomain) {
    std::printf("%s (%zu ops)\n", domain.c_str(), ops.size());
    total += ops.size();
    for (const auto& [op, ranges] : ops) {
      std::string text;
      for (const auto& [since, until] : ranges)
        text += (text.empty() ? "" : ", ") + std::to_string(since) +
                (until >= 1000 ? "+" : "-" + std::to_string(until));
      const bool cuda = hasGpu(domain, op);
      gpu += cuda;
      const ops::OpRow* row = ops::findOp(op);
      std::string kind = row ? std::string(ops::opKindName(row->kind)) : "";
      if (row && !row->tensorrtLayer.empty())
        kind += " (TensorRT " + std::string(row->tensorrtLayer) + ")";
      std::printf("  %-32s opset %-12s %-5s %s\n", op.c_str(), text.c_str(), cuda ? "cuda" : "",
                  kind.c_str());
    }
  }
  std::printf("%zu operators, %zu with a CUDA kernel%s\n", total, gpu,
              cuda::builtWithCuda() ? "" : " (this build has no CUDA)");
  return 0;
}

}  // namespace kiln::cli
