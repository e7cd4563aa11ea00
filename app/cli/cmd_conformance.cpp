// `kiln conformance DIR...`: runs ONNX backend node tests (model.onnx plus
// test_data_set_N/input_K.pb and output_K.pb) on the CPU reference backend.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/status_json.h"
#include "cli/tensor_compare.h"
#include "kiln/onnx_import.h"
#include "kiln/backends.h"
#include "kiln/cuda_runtime.h"
#include "kiln/file_io.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

enum class Outcome { kPass, kFail, kUnsupported, kNonTensor, kExpectedFail, kUnexpectedPass };

const char* outcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "PASS";
    case Outcome::kFail:
      return "FAIL";
    case Outcome::kUnsupported:
      return "UNSUPPORTED";
    case Outcome::kNonTensor:
      return "SKIP";
    case Outcome::kExpectedFail:
      return "XFAIL";
    case Outcome::kUnexpectedPass:
      return "XPASS";
  }
  return "?";
}

struct TestResult {
  std::string name;
  Outcome outcome = Outcome::kPass;
  std::string detail;
  double maxAbs = 0, maxRel = 0;
  std::optional<StatusNode> node;  // the node a failed run names (--json "node")
};

// Test directories: each DIR that holds model.onnx, or its subfolders that do.
Status findTests(const std::vector<std::string>& roots, std::vector<fs::path>* found) {
  std::vector<fs::path>& tests = *found;
  for (const std::string& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return notFound(root + ": no such test folder");
    const size_t before = tests.size();
    if (fs::exists(fs::path(root) / "model.onnx", ec)) {
      tests.push_back(root);
      continue;
    }
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
        tests.push_back(entry.path());
    }
    if (tests.size() == before)
      return notFound(root + ": holds no ONNX backend tests (no model.onnx)");
  }
  std::sort(tests.begin(), tests.end());
  return Status::ok();
}

std::vector<fs::path> sortedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == ".pb") {
      files.emplace_back(std::atoi(name.c_str() + prefix.size()), entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<fs::path> out;
  for (auto& f : files) out.push_back(f.second);
  return out;
}

// Tolerance override from --atol/--rtol (applies to floating-point outputs).
struct ToleranceOverride {
  bool set = false;
  Tolerance value;
};
ToleranceOverride g_override;

Tolerance toleranceFor(DataType type) {
  Tolerance t = defaultTolerance(type);
  if (g_override.set && isFloatingPoint(type)) t = g_override.value;
  return t;
}

// Which backend runs the tests, and how the CUDA runs placed their layers.
bool g_useCuda = false;
std::map<std::string, int64_t> g_placements;

Status runOnCpu(const Network& network, const std::map<std::string, Tensor>& inputs,
                std::vector<NamedTensor>* outputs) {
  ReferenceBackend backend(network);
  return backend.run(inputs, outputs);
}

// Builds a CUDA engine (float32, TF32 off) for the test, runs it once, and copies
// the outputs back.
Status runOnCuda(const Network& network, const std::map<std::string, Tensor>& inputs,
                 std::vector<NamedTensor>* outputs) {
  ReferenceBackend reference(network);
  KILN_RETURN_IF_ERROR(reference.validateInputs(inputs));
  cuda::EngineOptions options;
  options.allowTf32 = false;
  auto engine = cuda::Engine::create(std::make_shared<Network>(network), options);
  if (!engine.isOk()) return engine.status();
  auto context = engine.value()->createContext();
  if (!context.isOk()) return context.status();
  cuda::ExecutionContext& ctx = *context.value();
  for (const auto& [name, t] : inputs) KILN_RETURN_IF_ERROR(ctx.setInput(name, t));
  KILN_RETURN_IF_ERROR(ctx.execute());
  for (const cuda::LayerInfo& layer : ctx.layers())
    ++g_placements[cuda::layerPlacementName(layer.placement)];
  outputs->clear();
  for (const std::string& name : ctx.outputNames()) {
    auto out = ctx.getOutput(name);
    if (!out.isOk()) return out.status();
    outputs->push_back({name, out.value()});
  }
  return Status::ok();
}

TestResult runDataSet(const Network& network, const fs::path& dataDir, TestResult result) {
  std::map<std::string, Tensor> inputs;
  const auto inputFiles = sortedFiles(dataDir, "input_");
  for (size_t k = 0; k < inputFiles.size() && k < network.graph.inputs.size(); ++k) {
    auto t = readTensorProtoFile(inputFiles[k].string());
    if (!t.isOk()) return {result.name, Outcome::kFail, t.status().message()};
    inputs[network.graph.inputs[k].name] = std::move(t).value();
  }
  std::vector<NamedTensor> outputs;
  Status status =
      g_useCuda ? runOnCuda(network, inputs, &outputs) : runOnCpu(network, inputs, &outputs);
  if (!status.isOk()) {
    Outcome o = status.code() == StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFail;
    TestResult failed{result.name, o, status.message()};
    if (status.node()) failed.node = *status.node();
    return failed;
  }
  // Shape inference must agree with what the kernels produced wherever it claims a
  // concrete shape; this checks the symbolic rules on every test.
  std::map<std::string, Shape> inputShapes;
  for (const auto& [name, t] : inputs) inputShapes[name] = t.shape();
  auto inferred = inferShapes(network, inputShapes);
  if (!inferred.isOk())
    return {result.name, Outcome::kFail, "shape inference: " + inferred.status().message()};
  for (const NamedTensor& out : outputs) {
    auto it = inferred->values.find(out.name);
    if (it == inferred->values.end() || !it->second.hasShape) continue;
    bool concrete = true;
    Shape shape;
    for (const DimExpr& d : it->second.shape) {
      concrete = concrete && d.isConst();
      shape.push_back(d.isConst() ? d.constValue() : -1);
    }
    if (concrete && shape != out.tensor.shape()) {
      return {result.name, Outcome::kFail,
              "shape inference says " + shapeToString(shape) + " for '" + out.name +
                  "', the kernel produced " + shapeToString(out.tensor.shape())};
    }
  }
  const auto outputFiles = sortedFiles(dataDir, "output_");
  for (size_t k = 0; k < outputFiles.size() && k < outputs.size(); ++k) {
    auto expected = readTensorProtoFile(outputFiles[k].string());
    if (!expected.isOk()) return {result.name, Outcome::kFail, expected.status().message()};
    CompareResult cmp =
        compareTensors(outputs[k].tensor, expected.value(), toleranceFor(expected->type()));
    result.maxAbs = std::max(result.maxAbs, cmp.maxAbsError);
    result.maxRel = std::max(result.maxRel, cmp.maxRelError);
    if (!cmp.match) {
      result.outcome = Outcome::kFail;
      result.detail = "output '" + outputs[k].name + "' " + cmp.reason;
      return result;
    }
  }
  return result;
}

TestResult runTest(const fs::path& dir) {
  TestResult result{dir.filename().string()};
  auto network = importOnnxFile((dir / "model.onnx").string());
  if (!network.isOk()) {
    const std::string& msg = network.status().message();
    bool nonTensor = msg.find("is not a tensor") != std::string::npos;
    bool unsupportedOp = network.status().code() == StatusCode::kUnsupported;
    result.outcome = nonTensor       ? Outcome::kNonTensor
                     : unsupportedOp ? Outcome::kUnsupported
                                     : Outcome::kFail;
    result.detail = msg;
    return result;
  }
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  for (const fs::path& set : sets) {
    result = runDataSet(network.value(), set, result);
    if (result.outcome != Outcome::kPass) break;
  }
  return result;
}

// "test_name | reason" per line; '#' starts a comment.
std::map<std::string, std::string> readExpectedFailures(const std::string& path, Status* status) {
  std::map<std::string, std::string> entries;
  if (path.empty()) return entries;
  Result<std::string> text = readRegularFile(path, kMaxTextFileBytes);
  if (!text.isOk()) {
    *status = text.status().code() == StatusCode::kNotFound
                  ? notFound(path + ": cannot open expected-failures file")
                  : text.status();
    return entries;
  }
  std::istringstream file(text.value());
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t bar = line.find('|');
    std::string name = line.substr(0, bar);
    name.erase(name.find_last_not_of(" \t") + 1);
    entries[name] = bar == std::string::npos ? "" : line.substr(bar + 1);
  }
  return entries;
}

// An entry whose reason starts with "random output" lists a test whose expected values
// came from another random stream: an unseeded run can still draw them by chance (a
// Bernoulli of a few elements), so its pass is not an error.
bool mayPassByChance(const std::string& reason) {
  const size_t start = reason.find_first_not_of(" \t");
  return start != std::string::npos && reason.compare(start, 13, "random output") == 0;
}

}  // namespace

const char kConformanceUsage[] =
    "usage: kiln conformance DIR... [--expected-failures FILE] [--filter SUBSTRING] [--atol A] "
    "[--rtol R] [--backend cpu|cuda] [--json] [--quiet]\n"
    "  --backend cuda runs each test on the CUDA engine (fp32, TF32 off); default cpu.\n"
    "  DIR is one ONNX backend test (model.onnx + test_data_set_N/) or a folder of them.\n"
    "  Tests listed in FILE ('name | reason' lines) may fail; one that passes is an error "
    "(XPASS),\n  unless its reason starts with 'random output' (it may pass by chance).\n";

int runConformance(const std::vector<std::string>& argv) {
  Args args({"expected-failures", "filter", "atol", "rtol", "backend"}, {"json", "quiet"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("conformance", parsed.message(), 2);
  if (args.positional().empty()) return printUsage(kConformanceUsage, 2);
  const std::string backend = args.value("backend", "cpu");
  auto registered = findBackend(backend);
  if (!registered.isOk()) return fail("conformance", registered.status().message(), 2);
  if (const BackendDevice device = registered.value()->probe(0); !device.available)
    return fail("conformance", backend + " backend unavailable: " + device.reason);
  g_useCuda = backend != "cpu";
  if (args.has("atol") || args.has("rtol")) {
    g_override.set = true;
    for (Status s : {args.doubleValue("atol", 1e-5, &g_override.value.atol),
                     args.doubleValue("rtol", 1e-3, &g_override.value.rtol)}) {
      if (!s.isOk()) return fail("conformance", s.message(), 2);
    }
  }
  Status status;
  const auto expected = readExpectedFailures(args.value("expected-failures"), &status);
  if (!status.isOk()) return fail("conformance", status.message());
  std::map<Outcome, int> counts;
  nlohmann::json report = nlohmann::json::array();
  std::vector<fs::path> tests;
  Status found = findTests(args.positional(), &tests);
  if (!found.isOk()) return fail("conformance", found.message());
  for (const fs::path& dir : tests) {
    if (args.has("filter") &&
        dir.filename().string().find(args.value("filter")) == std::string::npos)
      continue;
    TestResult r = runTest(dir);
    const bool listed = expected.count(r.name) > 0;
    if (listed && (r.outcome == Outcome::kFail || r.outcome == Outcome::kUnsupported))
      r.outcome = Outcome::kExpectedFail;
    else if (listed && r.outcome == Outcome::kPass && !mayPassByChance(expected.at(r.name)))
      r.outcome = Outcome::kUnexpectedPass;
    ++counts[r.outcome];
    if (args.flag("json")) {
      report.push_back({{"test", r.name},
                        {"result", outcomeName(r.outcome)},
                        {"detail", r.detail},
                        {"max_abs_error", r.maxAbs},
                        {"max_rel_error", r.maxRel}});
      if (r.node) report.back()["node"] = statusNodeJson(*r.node);
    } else if (!args.flag("quiet") ||
               (r.outcome != Outcome::kPass && r.outcome != Outcome::kExpectedFail)) {
      if (r.outcome == Outcome::kPass)
        std::printf("PASS %s (max abs %.3g, max rel %.3g)\n",
                    escapeControlCharacters(r.name).c_str(), r.maxAbs, r.maxRel);
      else
        std::printf("%s %s: %s\n", outcomeName(r.outcome), escapeControlCharacters(r.name).c_str(),
                    r.outcome == Outcome::kUnexpectedPass
                        ? "passes but is listed as an expected failure; remove it"
                        : escapeControlCharacters(r.detail).c_str());
    }
  }
  const int passed = counts[Outcome::kPass];
  const int failed =
      counts[Outcome::kFail] + counts[Outcome::kUnsupported] + counts[Outcome::kUnexpectedPass];
  if (args.flag("json")) {
    nlohmann::json summary = {{"passed", passed},
                              {"failed", counts[Outcome::kFail]},
                              {"unsupported", counts[Outcome::kUnsupported]},
                              {"expected_failures", counts[Outcome::kExpectedFail]},
                              {"unexpected_passes", counts[Outcome::kUnexpectedPass]},
                              {"skipped_non_tensor", counts[Outcome::kNonTensor]},
                              {"tests", report}};
    if (g_useCuda) summary["cuda_layer_placements"] = g_placements;
    std::printf("%s\n",
                summary.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%d passed, %d failed\n", passed, failed);
    std::printf(
        "(%d unsupported, %d expected failures, %d unexpected passes, %d skipped: not "
        "tensor-only)\n",
        counts[Outcome::kUnsupported], counts[Outcome::kExpectedFail],
        counts[Outcome::kUnexpectedPass], counts[Outcome::kNonTensor]);
    if (g_useCuda) {
      std::printf("CUDA layer placement:");
      for (const auto& [placement, n] : g_placements)
        std::printf(" %s %lld", placement.c_str(), static_cast<long long>(n));
      std::printf("\n");
    }
  }
  return failed == 0 ? 0 : 1;
}

void printReportText(const std::string& text) {
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = escapeControlCharacters(text.substr(start, end - start));
    std::printf("%s%s", line.c_str(), end < text.size() ? "\n" : "");
    start = end + 1;
  }
}

int fail(const std::string& command, const std::string& message, int code) {
  std::fprintf(stderr, "kiln %s: %s\n", command.c_str(), escapeControlCharacters(message).c_str());
  return code;
}

}  // namespace kiln::cli
