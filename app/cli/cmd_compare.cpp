// `kiln compare`: accuracy of one side against another (an engine against the FP32
// CPU reference, two engines, two backends) on the same inputs, and side-by-side
// builds (`--builds a.kiln b.kiln ...`) aligned through ONNX provenance.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/compare_inputs.h"
#include "compare/accuracy_compare.h"
#include "compare/build_diff.h"
#include "engine_report.h"
#include "kiln/file_io.h"
#include "kiln/plan.h"

namespace kiln::cli {

const char kCompareUsage[] =
    "usage: kiln compare A [B] [options]         accuracy of A against B (the expected side)\n"
    "       kiln compare --builds P1 P2 [P3...]  side-by-side builds aligned by ONNX node\n\n"
    "  A, B: MODEL.onnx (CPU reference, fp32) or PLAN.kiln (its backend, tactics and\n"
    "        precisions). Without B, a plan is compared with its own network on the\n"
    "        CPU reference in fp32.\n"
    "  --backend-a/--backend-b cpu|cuda  where an ONNX side runs (cpu)\n"
    "  --precision-a/--precision-b fp32|fp16|bf16  CUDA runs of an ONNX side (fp32)\n"
    "  --shapes in:1x3x224x224,...  input shapes (default: a plan's profile 0 opt shapes)\n"
    "  --load-inputs in:x.npy,...   inputs from .npy/.pb files (others random)\n"
    "  --seed N (1) --runs N (1)    random input sets: seeds N, N+1, ...\n"
    "  --data DIR [--preprocess SPEC] [--input NAME] [--batch N (1)]\n"
    "                               a folder of samples (.npy, images), as kiln calibrate\n"
    "  --atol X --rtol Y            tolerance (default 1e-5/1e-3; 1e-2/1e-2 when a plan\n"
    "                               has fp16/bf16 layers): |a-b| <= atol + rtol*|b|\n"
    "  --per-tensor                 also every intermediate both sides expose; names the\n"
    "                               tensors fused away on one side and the first divergence\n"
    "  --top-k K (5)                top-k agreement of outputs along the last axis; 0: off\n"
    "  --json | --output FILE       the report as JSON (stdout / file)\n"
    "  --device N (0)\n"
    "  builds: --json, --sort execution|delta, --all (unchanged rows too)\n"
    "exit: 0 within tolerance, 1 error, 2 usage, 3 some output outside the tolerance\n";

namespace {

constexpr int kOutsideTolerance = 3;  // exit code: compared, and some output differs

bool hasReducedLayers(const std::shared_ptr<const Plan>& plan) {
  if (!plan) return false;
  for (const LayerImplementation& l : plan->layers)
    if (l.precision == DataType::kFloat16 || l.precision == DataType::kBFloat16) return true;
  return false;
}

Status writeJsonFile(const std::string& path, const nlohmann::json& j) {
  return writeFileAtomically(
      path, j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "the report");
}

Result<inspector::EngineReport> loadReport(const std::string& path) {
  if (looksLikePlanFile(path)) {
    KILN_ASSIGN_OR_RETURN(Plan plan, loadPlanFile(path));
    return inspector::reportFromPlan(plan, path);
  }
  return inspector::reportFromTrtexec(path, "");
}

int compareBuilds(const Args& args) {
  if (args.positional().size() < 2)
    return fail("compare", "--builds needs at least two plans or trtexec graph exports", 2);
  const std::string sort = args.value("sort", "execution");
  if (sort != "execution" && sort != "delta")
    return fail("compare", "--sort takes execution or delta", 2);
  std::vector<inspector::EngineReport> reports;
  for (const std::string& path : args.positional()) {
    auto report = loadReport(path);
    if (!report.isOk()) return fail("compare", report.status().message());
    reports.push_back(std::move(report.value()));
  }
  std::vector<const inspector::EngineReport*> pointers;
  for (const auto& r : reports) pointers.push_back(&r);
  const compare::BuildDiff diff = compare::diffBuilds(pointers);
  nlohmann::json json = compare::buildDiffJson(diff);
  if (args.has("output")) {
    if (Status s = writeJsonFile(args.value("output"), json); !s.isOk())
      return fail("compare", s.message());
  }
  if (args.flag("json")) {
    std::printf("%s\n", json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  const auto order =
      sort == "delta" ? compare::DiffOrder::kTimeDelta : compare::DiffOrder::kExecution;
  printReportText(compare::formatBuildDiff(diff, order, args.flag("all")));
  return 0;
}

Status toleranceFromArgs(const Args& args, bool reduced, compare::Tolerance* tolerance) {
  *tolerance = compare::defaultTolerance(reduced ? DataType::kFloat16 : DataType::kFloat32);
  KILN_RETURN_IF_ERROR(args.doubleValue("atol", tolerance->atol, &tolerance->atol));
  KILN_RETURN_IF_ERROR(args.doubleValue("rtol", tolerance->rtol, &tolerance->rtol));
  if (tolerance->atol < 0 || tolerance->rtol < 0)
    return invalidArgument("--atol and --rtol must be >= 0");
  return Status::ok();
}

int compareAccuracy(const Args& args) {
  if (args.positional().empty() || args.positional().size() > 2)
    return printUsage(kCompareUsage, 2);
  int64_t device, topK;
  for (Status s : {args.intValue("device", 0, &device), args.intValue("top-k", 5, &topK)})
    if (!s.isOk()) return fail("compare", s.message(), 2);
  if (topK < 0) return fail("compare", "--top-k must be >= 0", 2);
  compare::SideSpec specA{args.positional()[0], args.value("backend-a"), args.value("precision-a"),
                          static_cast<int>(device)};
  std::shared_ptr<const Plan> planA, planB;
  auto sideA = compare::openSide(specA, &planA);
  if (!sideA.isOk()) return fail("compare", sideA.status().message());
  std::unique_ptr<compare::ModelRunner> sideB;
  if (args.positional().size() == 2) {
    compare::SideSpec specB{args.positional()[1], args.value("backend-b"),
                            args.value("precision-b"), static_cast<int>(device)};
    auto opened = compare::openSide(specB, &planB);
    if (!opened.isOk()) return fail("compare", opened.status().message());
    sideB = std::move(opened.value());
  } else if (planA) {
    sideB = compare::referenceRunner(planA->network, specA.path + " (its network)");
  } else {
    return fail("compare", "give B, or a plan as A (compared with its network on the reference)",
                2);
  }
  compare::CompareOptions options;
  options.perTensor = args.flag("per-tensor");
  options.topK = static_cast<int>(topK);
  if (Status s = toleranceFromArgs(args, hasReducedLayers(planA) || hasReducedLayers(planB),
                                   &options.tolerance);
      !s.isOk())
    return fail("compare", s.message(), 2);
  auto inputSets = prepareInputSets(args, (*sideA)->network(),
                                    std::vector<const Plan*>{planA.get(), planB.get()});
  if (!inputSets.isOk()) return fail("compare", inputSets.status().message(), 2);
  auto report = compare::compareAccuracy(**sideA, *sideB, inputSets.value(), options);
  if (!report.isOk()) return fail("compare", report.status().message());
  const nlohmann::json json = compare::accuracyReportJson(report.value(), true);
  if (args.has("output")) {
    if (Status s = writeJsonFile(args.value("output"), json); !s.isOk())
      return fail("compare", s.message());
  }
  if (args.flag("json"))
    std::printf("%s\n", json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else
    printReportText(compare::formatAccuracyReport(report.value()));
  return report->pass ? 0 : kOutsideTolerance;
}

}  // namespace

int runCompare(const std::vector<std::string>& argv) {
  Args args({"shapes", "load-inputs", "seed", "runs", "atol", "rtol", "top-k", "backend-a",
             "backend-b", "precision-a", "precision-b", "device", "output", "sort", "data",
             "preprocess", "input", "batch"},
            {"json", "per-tensor", "builds", "all"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("compare", parsed.message(), 2);
  return args.flag("builds") ? compareBuilds(args) : compareAccuracy(args);
}

}  // namespace kiln::cli
