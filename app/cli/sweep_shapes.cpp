// `kiln sweep --shape-sweep` (sweep_shapes.h): the builds and runs; the plan of points and
// the proposal are inspector/shape_sweep.cpp's.
#include "cli/sweep_shapes.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/build_options.h"
#include "cli/commands.h"
#include "cli/sweep_process.h"
#include "cli/tensor_args.h"
#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "shape_sweep.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The inputs' shapes at one value of the swept symbol.
class SweptShapes {
 public:
  static Result<SweptShapes> make(const Network& network, const kiln::sweep::ShapeSweepSpec& spec,
                                  const std::map<std::string, Shape>& given) {
    SweptShapes out;
    const ValueInfo* swept = nullptr;
    for (const ValueInfo& in : network.graph.inputs)
      if (in.name == spec.input) swept = &in;
    if (!swept)
      return invalidArgument("--shape-sweep: the model has no input '" + spec.input + "'");
    for (const DimExpr& d : swept->shape)
      if (d.isSymbol()) {
        out.m_symbol = d.symbolName();
        break;
      }
    if (out.m_symbol.empty())
      return invalidArgument("--shape-sweep: input '" + spec.input + "' has no dynamic dimension");
    for (const ValueInfo& in : network.graph.inputs) {
      if (network.graph.initializers.count(in.name)) continue;
      Input item{in.name, {}, {}};
      auto base = given.find(in.name);
      for (size_t k = 0; k < in.shape.size(); ++k) {
        const DimExpr& d = in.shape[k];
        if (d.isSymbol() && d.symbolName() == out.m_symbol) {
          item.swept.push_back(k);
          item.dims.push_back(0);
        } else if (base != given.end() && base->second.size() == in.shape.size()) {
          item.dims.push_back(base->second[k]);
        } else if (auto v = d.evaluate()) {
          item.dims.push_back(*v);
        } else {
          return invalidArgument("--shape-sweep: input '" + in.name + "' dimension " +
                                 std::to_string(k) + " (" + d.toString() +
                                 ") is dynamic too: give it in --opt-shapes");
        }
      }
      out.m_inputs.push_back(item);
    }
    return out;
  }

  // "x:4x3x48x192,mask:4x128" with the symbol at `value`.
  std::string at(int64_t value) const {
    std::string text;
    for (const Input& in : m_inputs) {
      Shape dims = in.dims;
      for (size_t k : in.swept) dims[k] = value;
      text += (text.empty() ? "" : ",") + in.name + ":";
      for (size_t k = 0; k < dims.size(); ++k) text += (k ? "x" : "") + std::to_string(dims[k]);
    }
    return text;
  }
  const std::string& symbol() const { return m_symbol; }

 private:
  struct Input {
    std::string name;
    Shape dims;
    std::vector<size_t> swept;
  };
  std::string m_symbol;
  std::vector<Input> m_inputs;
};

// The median of `kiln run --json`'s latency; -1 (after one line) when the run failed.
double timedRun(const std::string& kiln, const std::string& plan, const std::string& shapes,
                const std::string& iterations) {
  auto run = sweep::capture(
      {kiln, "run", plan, "--shapes", shapes, "--iterations", iterations, "--json"}, 600);
  if (run.isOk() && run->exitCode == 0) {
    const json doc = json::parse(run->out, nullptr, false);
    if (doc.is_object() && doc.contains("latency_ms") && doc["latency_ms"].is_object())
      return doc["latency_ms"].value("median", -1.0);
  }
  std::fprintf(stderr, "kiln sweep: run of %s at %s failed: %s\n", plan.c_str(), shapes.c_str(),
               run.isOk() ? sweep::lastLine(run->err).c_str() : run.status().message().c_str());
  return -1;
}

}  // namespace

int runShapeSweep(const Args& args) {
  const std::string model = args.positional()[0];
  auto spec = kiln::sweep::parseShapeSweep(args.value("shape-sweep"));
  if (!spec.isOk()) return fail("sweep", spec.status().message(), 2);
  double tolerance = 0.10;
  if (Status s = args.doubleValue("tolerance", 0.10, &tolerance); !s.isOk() || tolerance < 0)
    return fail("sweep", "--tolerance takes a fraction >= 0 (0.10: within 10%)", 2);
  std::map<std::string, Shape> given;
  if (args.has("opt-shapes"))
    if (Status s = parseShapeList(args.value("opt-shapes"), &given); !s.isOk())
      return fail("sweep", s.message(), 2);
  auto network = importOnnxFile(model);
  if (!network.isOk()) return fail("sweep", network.status().message());
  auto shapes = SweptShapes::make(*network, *spec, given);
  if (!shapes.isOk()) return fail("sweep", shapes.status().message(), 2);
  const std::string dir =
      fs::absolute(args.value("dir", fs::path(model).stem().string() + ".shape-sweep"));
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return fail("sweep", dir + ": cannot create (" + error.message() + ")");
  const std::vector<int64_t> points = kiln::sweep::shapeSweepPoints(spec->lo, spec->hi);
  const std::string kiln = sweep::selfExecutable();
  const std::string iterations = args.value("iterations", "20");
  std::fprintf(stderr, "kiln sweep: '%s' (symbol %s) at %zu points, %zu plans x %zu runs\n",
               spec->input.c_str(), shapes->symbol().c_str(), points.size(), points.size(),
               points.size());
  sweep::installInterruptHandlers();
  std::vector<std::vector<double>> ms(points.size(), std::vector<double>(points.size(), -1));
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string plan = dir + "/opt_" + std::to_string(points[i]) + ".kiln";
    std::vector<std::string> build = {kiln,
                                      "build",
                                      model,
                                      "-o",
                                      plan,
                                      "--backend",
                                      args.value("backend", kDefaultBuildBackend),
                                      "--min-shapes",
                                      shapes->at(spec->lo),
                                      "--opt-shapes",
                                      shapes->at(points[i]),
                                      "--max-shapes",
                                      shapes->at(spec->hi),
                                      "--quiet"};
    const std::string precision = args.value("precision", "fp32");
    if (precision == "fp16" || precision == "bf16") build.push_back("--" + precision);
    auto built = sweep::capture(build, 1800);
    if (sweep::interrupted()) return 130;
    if (!built.isOk() || built->exitCode != 0) {
      std::fprintf(
          stderr, "kiln sweep: build with opt %lld failed: %s\n", static_cast<long long>(points[i]),
          built.isOk() ? sweep::lastLine(built->err).c_str() : built.status().message().c_str());
      continue;
    }
    for (size_t j = 0; j < points.size(); ++j) {
      ms[i][j] = timedRun(kiln, plan, shapes->at(points[j]), iterations);
      if (sweep::interrupted()) return 130;
    }
    std::fprintf(stderr, "kiln sweep: opt %lld: timed at %zu points\n",
                 static_cast<long long>(points[i]), points.size());
  }
  bool anyTimed = false;
  for (size_t i = 0; i < points.size(); ++i) anyTimed = anyTimed || ms[i][i] > 0;
  if (!anyTimed) return fail("sweep", "no plan of the shape sweep built and ran (see above)");
  const auto proposals = kiln::sweep::proposeProfiles(points, ms, spec->lo, spec->hi, tolerance);
  json doc = {
      {"model", model}, {"input", spec->input},   {"symbol", shapes->symbol()}, {"points", points},
      {"ms", ms},       {"tolerance", tolerance}, {"profiles", json::array()}};
  std::string options;
  for (const auto& p : proposals) {
    doc["profiles"].push_back({{"min", shapes->at(p.min)},
                               {"opt", shapes->at(p.opt)},
                               {"max", shapes->at(p.max)},
                               {"worst_slowdown", p.worstSlowdown}});
    options += " --min-shapes " + shapes->at(p.min) + " --opt-shapes " + shapes->at(p.opt) +
               " --max-shapes " + shapes->at(p.max);
  }
  doc["build_options"] = options.empty() ? options : options.substr(1);
  if (Status s = writeFileAtomically(dir + "/shape_sweep.json", doc.dump(1) + "\n",
                                     "the shape sweep's result");
      !s.isOk())
    return fail("sweep", s.message());
  if (args.flag("json")) {
    std::printf("%s\n", doc.dump(1).c_str());
    return 0;
  }
  std::printf("%s", kiln::sweep::formatShapeSweep(points, ms, proposals, tolerance).c_str());
  std::printf("build them: kiln build %s -o PLAN.kiln%s\n", model.c_str(), options.c_str());
  return 0;
}

}  // namespace kiln::cli
