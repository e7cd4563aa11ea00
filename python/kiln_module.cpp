// kiln._kiln: the Python API's module (docs/python.md). This file holds kiln.Model,
// kiln.build, kiln.calibrate, kiln.compare and the plugins; kiln_plan.cpp holds
// kiln.Plan, kiln_convert.cpp the shared machinery (errors, NumPy conversion,
// interruptible calls).
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "cli/args.h"
#include "cli/build_options.h"
#include "compare/accuracy_compare.h"
#include "compare/build_diff.h"
#include "compare/model_runner.h"
#include "compare/tensor_compare.h"
#include "engine_report.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/backends.h"
#include "kiln/cuda_calibration.h"
#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"
#include "kiln/timing_cache.h"
#include "kiln/version.h"
#include "kiln_python.h"
#include "model_summary.h"
#include "version_report.h"

namespace kiln::python {

const char* gitRevision();  // kiln_version.cpp

namespace {

// ---- kiln.Model ----------------------------------------------------------------------

struct ModelHandle {
  std::shared_ptr<const Network> network;
  std::string path;
};

ModelHandle loadOnnx(const std::filesystem::path& file, bool checkSupport) {
  const std::string path = file.string();
  ImportOptions options;
  options.checkSupport = checkSupport;
  std::optional<Result<Network>> network;
  {
    py::gil_scoped_release release;
    network.emplace(importOnnxFile(path, options));
  }
  return {std::make_shared<const Network>(take(std::move(*network))), path};
}

// A Model, or a path to import, as the network and the name errors give it.
ModelHandle modelOf(const py::object& model) {
  if (py::isinstance<ModelHandle>(model)) return model.cast<ModelHandle>();
  if (py::isinstance<py::str>(model) || py::hasattr(model, "__fspath__"))
    return loadOnnx(py::str(py::module_::import("os").attr("fspath")(model)).cast<std::string>(),
                    true);
  throw py::type_error("expected a kiln.Model or the path of an ONNX model");
}

py::dict opCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node& node : graph.nodes)
    ++counts[node.domain.empty() ? node.opType : node.domain + "::" + node.opType];
  py::dict out;
  for (const auto& [op, n] : counts) out[py::str(op)] = n;
  return out;
}

// {"in": (1, 3, 224, 224)} or "in:1x3x224x224" -> the shapes `kiln` takes.
std::string shapeListText(const py::handle& value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::dict>(value))
    throw py::type_error("shapes are a dict of input name -> shape, or 'in:1x3x224x224,...'");
  std::string text;
  for (const auto& [name, shape] : value.cast<py::dict>()) {
    std::string dims;
    if (py::isinstance<py::int_>(shape)) {
      dims = std::to_string(shape.cast<int64_t>());
    } else {
      for (const auto& d : shape)
        dims += (dims.empty() ? "" : "x") + std::to_string(d.cast<int64_t>());
      if (dims.empty()) dims = "scalar";
    }
    text += (text.empty() ? "" : ",") + py::str(name).cast<std::string>() + ":" + dims;
  }
  return text;
}

std::map<std::string, Shape> shapesOf(const py::object& shapes) {
  std::map<std::string, Shape> out;
  if (shapes.is_none()) return out;
  for (const auto& [name, shape] : shapes.cast<py::dict>())
    out[py::str(name)] = shape.cast<Shape>();
  return out;
}

py::object inspectModel(const ModelHandle& model, const py::object& shapes) {
  auto summary = inspector::summarizeModel(*model.network, shapesOf(shapes));
  check(summary.status(), model.path);
  return jsonToPython(summary->dump());
}

py::dict runModel(const ModelHandle& model, const py::dict& inputs) {
  return runReference(*model.network, tensorsFromDict(inputs, model.network->graph), {},
                      model.path);
}

// ---- kiln.CalibrationCache -------------------------------------------------------------

struct CacheHandle {
  CalibrationTable table;
};

py::dict cacheRanges(const CacheHandle& cache) {
  py::dict out;
  for (const auto& [name, range] : cache.table.tensors)
    out[py::str(name)] =
        range.pinned == DataType::kUndefined
            ? py::object(py::float_(range.amax))
            : py::object(py::str(std::string("pin ") +
                                 (range.pinned == DataType::kFloat16 ? "fp16" : "fp32")));
  return out;
}

// ---- kiln.build ----------------------------------------------------------------------

// Options that mean something else in Python, and what to use instead.
const std::map<std::string, std::string>& notKeywords() {
  static const std::map<std::string, std::string> k = {
      {"output", "call plan.save(path)"},
      {"sign", "call plan.save(path, sign=KEY)"},
      {"json", "the plan's record is plan.record"},
      {"quiet", "builds print nothing; pass progress=callable for progress"},
      {"help", "help(kiln.build)"},
      {"list-passes", "call kiln.list_passes()"},
      {"accuracy-data", "call kiln.compare(plan, model, inputs=...)"},
      {"preprocess", "call kiln.compare(plan, model, inputs=...)"},
  };
  return k;
}

// One keyword argument as `kiln build` arguments (name with dashes).
void appendOption(const std::string& option, const py::handle& value, bool isFlag,
                  std::vector<std::string>* argv) {
  const std::string dashed = "--" + option;
  if (isFlag) {
    if (!py::isinstance<py::bool_>(value)) throw py::type_error(option + " takes True or False");
    if (value.cast<bool>()) argv->push_back(dashed);
    return;
  }
  if (value.is_none()) return;
  auto push = [&](const std::string& text) {
    argv->push_back(dashed);
    argv->push_back(text);
  };
  if (option == "min-shapes" || option == "opt-shapes" || option == "max-shapes") {
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      for (const auto& profile : value) push(shapeListText(profile));  // one per profile
    } else {
      push(shapeListText(value));
    }
  } else if (py::isinstance<py::dict>(value)) {  // layer_precisions={"*": "fp16"}
    std::string text;
    for (const auto& [k, v] : value.cast<py::dict>())
      text += (text.empty() ? "" : ",") + py::str(k).cast<std::string>() + ":" +
              py::str(v).cast<std::string>();
    push(text);
  } else if (py::isinstance<py::bool_>(value)) {
    throw py::type_error(option + " takes a value, not True/False");
  } else if (option == "disable-pass" && !py::isinstance<py::str>(value)) {
    for (const auto& name : value) push(py::str(name));
  } else if (option == "tactic-sources" && !py::isinstance<py::str>(value)) {
    std::string text;
    for (const auto& s : value) text += (text.empty() ? "" : ",") + py::str(s).cast<std::string>();
    push(text);
  } else if (py::hasattr(value, "__fspath__")) {
    push(py::str(py::module_::import("os").attr("fspath")(value)));
  } else {
    push(py::str(value));
  }
}

PlanHandle build(const py::object& model, const py::kwargs& kwargs) {
  const ModelHandle source = modelOf(model);
  const std::set<std::string> valued = cli::buildValuedOptions(), flags = cli::buildFlagOptions();
  std::vector<std::string> argv;
  const CacheHandle* memoryCache = nullptr;
  py::object progress = py::none();
  for (const auto& [key, value] : kwargs) {
    std::string option = py::str(key);
    std::replace(option.begin(), option.end(), '_', '-');
    if (option == "progress") {
      progress = py::reinterpret_borrow<py::object>(value);
      continue;
    }
    if (notKeywords().count(option))
      throw py::type_error("build() does not take " + py::str(key).cast<std::string>() + ": " +
                           notKeywords().at(option));
    if (!valued.count(option) && !flags.count(option))
      throw py::type_error("build() got an unexpected keyword argument '" +
                           py::str(key).cast<std::string>() + "' (the options of kiln build)");
    if (option == "calib-cache" && py::isinstance<CacheHandle>(value)) {
      memoryCache = &value.cast<const CacheHandle&>();
      argv.push_back("--calib-cache");
      argv.push_back("<kiln.CalibrationCache>");
      continue;
    }
    appendOption(option, value, flags.count(option) != 0, &argv);
  }
  cli::Args args(valued, flags);
  check(args.parse(argv));
  BuilderConfig config;
  check(cli::builderConfigFromArgs(args, &config));
  int64_t device;
  check(args.intValue("device", 0, &device));
  const std::string backendName = args.value("backend", cli::kDefaultBuildBackend);

  TimingCache cache;
  if (args.has("timing-cache")) {
    auto loaded = TimingCache::load(args.value("timing-cache"));
    if (loaded.isOk())
      cache = std::move(loaded.value());
    else if (loaded.status().code() != StatusCode::kNotFound)
      check(loaded.status());
    config.timingCache = &cache;
  }
  TacticReplay replay;
  if (args.has("load-tactics")) {
    replay = take(TacticReplay::load(args.value("load-tactics")));
    config.replay = &replay;
  }
  CalibrationTable calibration;
  if (memoryCache) {
    calibration = memoryCache->table;
    config.calibration = &calibration;
  } else if (!config.calibrationCachePath.empty()) {
    calibration = take(loadCalibrationCache(config.calibrationCachePath));
    config.calibration = &calibration;
  }
  std::atomic<bool> cancel{false};
  std::vector<std::string> warnings;
  std::optional<py::error_already_set> callbackError;
  config.callbacks.cancel = &cancel;
  config.callbacks.onWarning = [&warnings](const std::string& w) { warnings.push_back(w); };
  if (!progress.is_none()) {
    config.callbacks.onProgress = [&](const BuildProgress& p) {
      py::gil_scoped_acquire acquire;
      if (callbackError) return;
      try {
        py::dict step;
        step["phase"] = p.phase;
        step["done"] = p.done;
        step["total"] = p.total;
        step["item"] = p.item;
        progress(step);
      } catch (py::error_already_set& e) {  // the callback raised: stop the build
        callbackError.emplace(std::move(e));
        cancel.store(true);
      }
    };
  }
  auto backend = take(createBuildBackend(backendName, static_cast<int>(device), config));
  std::optional<Result<Plan>> plan;
  runInterruptible([&] { plan.emplace(buildPlan(source.network, config, *backend)); }, &cancel);
  if (callbackError) throw std::move(*callbackError);
  check(plan->status(), source.path);
  for (const std::string& w : warnings)
    if (PyErr_WarnEx(PyExc_UserWarning, escapeControlCharacters(w).c_str(), 1) != 0)
      throw py::error_already_set();
  if (config.timingCache) check(cache.save(args.value("timing-cache")));
  if (args.has("save-tactics"))
    check(TacticReplay::fromRecord((*plan)->record).save(args.value("save-tactics")));
  return {std::make_shared<const Plan>(std::move(*plan).value()), source.path, nullptr};
}

// ---- kiln.calibrate --------------------------------------------------------------------

std::map<std::string, Tensor> batchOf(const py::handle& item, const Graph& graph, size_t index) {
  if (py::isinstance<py::dict>(item)) return tensorsFromDict(item.cast<py::dict>(), graph);
  if (graph.inputs.size() != 1)
    throw Error(invalidArgument("batch " + std::to_string(index) +
                                ": a model with several inputs takes dicts of input name -> "
                                "array"));
  return {{graph.inputs[0].name,
           tensorFromArray(item, "input '" + graph.inputs[0].name + "'", graph.inputs[0].type)}};
}

CacheHandle calibrate(const py::object& model, const py::iterable& batches,
                      const std::string& method, double percentile, const std::string& backend,
                      int device) {
  const ModelHandle source = modelOf(model);
  CalibrationOptions options;
  if (!parseCalibrationMethod(method, &options.method))
    throw Error(invalidArgument("method takes entropy, minmax or percentile"));
  options.percentile = percentile;
  cuda::CalibrationBackend where = cuda::CalibrationBackend::kDefault;
  if (!backend.empty()) {
    take(findBackend(backend));
    if (!cuda::parseCalibrationBackend(backend, &where))
      throw Error(invalidArgument("calibration does not run on backend '" + backend + "'"));
  }
  std::vector<std::map<std::string, Tensor>> data;
  for (const auto& item : batches)
    data.push_back(batchOf(item, source.network->graph, data.size()));
  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  std::vector<std::string> notices;
  options.onNotice = [&notices](const std::string& text) { notices.push_back(text); };
  std::optional<Result<CalibrationResult>> result;
  runInterruptible(
      [&] {
        result.emplace(cuda::calibrateOnBackend(*source.network, data, options, where, device));
      },
      &cancel);
  check(result->status(), source.path);
  for (const std::string& n : notices)
    if (PyErr_WarnEx(PyExc_UserWarning, escapeControlCharacters(n).c_str(), 1) != 0)
      throw py::error_already_set();
  return {(*result)->table};
}

// ---- kiln.compare ----------------------------------------------------------------------

// One side: a Plan, a Model or a path (plan or ONNX, as `kiln compare` opens it).
std::unique_ptr<compare::ModelRunner> sideOf(const py::object& side, const std::string& backend,
                                             const std::string& precision, int device,
                                             std::shared_ptr<const Plan>* plan) {
  if (py::isinstance<PlanHandle>(side)) {
    const auto& handle = side.cast<const PlanHandle&>();
    *plan = handle.plan;
    return take(compare::planRunner(handle.plan, handle.title));
  }
  if (py::isinstance<ModelHandle>(side)) {
    const auto& model = side.cast<const ModelHandle&>();
    return compare::referenceRunner(model.network, model.path);
  }
  const std::string path = py::str(py::module_::import("os").attr("fspath")(side));
  return take(compare::openSide({path, backend, precision, device}, plan));
}

bool hasReducedLayers(const std::shared_ptr<const Plan>& plan) {
  if (!plan) return false;
  for (const LayerImplementation& l : plan->layers)
    if (l.precision == DataType::kFloat16 || l.precision == DataType::kBFloat16) return true;
  return false;
}

py::object compareSides(const py::object& a, const py::object& b, const py::object& inputs,
                        const py::object& shapes, int64_t seed, int runs, py::object atol,
                        py::object rtol, bool perTensor, int topK, const std::string& backendA,
                        const std::string& backendB, const std::string& precisionA,
                        const std::string& precisionB, int device) {
  std::shared_ptr<const Plan> planA, planB;
  auto sideA = sideOf(a, backendA, precisionA, device, &planA);
  std::unique_ptr<compare::ModelRunner> sideB;
  if (!b.is_none())
    sideB = sideOf(b, backendB, precisionB, device, &planB);
  else if (planA)
    sideB = compare::referenceRunner(planA->network, "the plan's network");
  else
    throw Error(invalidArgument("give b, or a plan as a (compared with its network)"));
  compare::CompareOptions options;
  options.perTensor = perTensor;
  options.topK = topK;
  options.tolerance = compare::defaultTolerance(
      hasReducedLayers(planA) || hasReducedLayers(planB) ? DataType::kFloat16 : DataType::kFloat32);
  if (!atol.is_none()) options.tolerance.atol = atol.cast<double>();
  if (!rtol.is_none()) options.tolerance.rtol = rtol.cast<double>();
  std::vector<std::map<std::string, Tensor>> sets;
  const Graph& graph = sideA->network().graph;
  if (py::isinstance<py::dict>(inputs)) {
    sets.push_back(tensorsFromDict(inputs.cast<py::dict>(), graph));
  } else if (!inputs.is_none()) {
    for (const auto& set : inputs) sets.push_back(tensorsFromDict(set.cast<py::dict>(), graph));
  } else {
    std::map<std::string, Shape> chosen = shapesOf(shapes);
    if (chosen.empty())
      for (const auto* plan : {planA.get(), planB.get()})
        if (plan && chosen.empty()) chosen = compare::optShapesOf(plan->profiles);
    for (int r = 0; r < std::max(runs, 1); ++r)
      sets.push_back(take(compare::randomInputSet(sideA->network(), chosen, seed + r)));
  }
  std::optional<Result<compare::AccuracyReport>> report;
  std::atomic<bool> cancel{false};
  runInterruptible([&] { report.emplace(compare::compareAccuracy(*sideA, *sideB, sets, options)); },
                   &cancel);
  check(report->status());
  return jsonToPython(compare::accuracyReportJson(report->value(), true).dump());
}

py::object compareBuilds(const py::args& plans) {
  std::vector<inspector::EngineReport> reports;
  for (const auto& p : plans) {
    if (py::isinstance<PlanHandle>(p)) {
      const auto& handle = p.cast<const PlanHandle&>();
      reports.push_back(inspector::reportFromPlan(*handle.plan, handle.title));
      continue;
    }
    const std::string path = py::str(py::module_::import("os").attr("fspath")(p));
    if (looksLikePlanFile(path))
      reports.push_back(inspector::reportFromPlan(take(loadPlanFile(path)), path));
    else
      reports.push_back(take(inspector::reportFromTrtexec(path, "")));
  }
  if (reports.size() < 2) throw Error(invalidArgument("compare_builds needs at least two plans"));
  std::vector<const inspector::EngineReport*> pointers;
  for (const auto& r : reports) pointers.push_back(&r);
  return jsonToPython(compare::buildDiffJson(compare::diffBuilds(pointers)).dump());
}

// ---- plugins and passes -------------------------------------------------------------------

py::list pluginList() {
  py::list out;
  for (const PluginCreatorInfo& c : registeredPlugins()) {
    py::list fields;
    for (const PluginFieldInfo& f : c.fields)
      fields.append(py::dict(py::arg("name") = f.name, py::arg("type") = f.type,
                             py::arg("length") = f.length));
    out.append(py::dict(py::arg("name") = c.name, py::arg("version") = c.version,
                        py::arg("namespace") = c.pluginNamespace, py::arg("library") = c.library,
                        py::arg("fields") = fields));
  }
  return out;
}

py::list loadPlugins(const py::object& paths) {
  std::vector<std::string> list;
  if (py::isinstance<py::str>(paths) || py::hasattr(paths, "__fspath__"))
    list.push_back(py::str(py::module_::import("os").attr("fspath")(paths)));
  else
    for (const auto& p : paths)
      list.push_back(py::str(py::module_::import("os").attr("fspath")(p)));
  for (const std::string& path : list) check(loadPluginLibrary(path));
  return pluginList();
}

py::list passList() {
  py::list out;
  for (const PassInfo& p : listPasses())
    out.append(py::dict(py::arg("name") = p.name, py::arg("minimum_level") = p.minimumLevel,
                        py::arg("description") = p.description));
  return out;
}

std::string pep440Version() {
  std::string local = gitRevision();
  std::replace(local.begin(), local.end(), '-', '.');
  return std::string(kKilnVersion) + "+git" + local;
}

void defineModel(py::module_& m) {
  py::class_<ModelHandle>(m, "Model",
                          "An imported ONNX model (kiln.load_onnx): its inputs, outputs and ops; "
                          "kiln.build(model, ...) builds it.")
      .def_readonly("path", &ModelHandle::path, "The file it was imported from.")
      .def_property_readonly(
          "inputs", [](const ModelHandle& h) { return valueInfoList(h.network->graph.inputs); },
          "Graph inputs as dicts: name, dtype ('float32', ...), shape (ints; symbolic dims as "
          "strings; None when the rank is unknown).")
      .def_property_readonly(
          "outputs", [](const ModelHandle& h) { return valueInfoList(h.network->graph.outputs); },
          "Graph outputs, as inputs.")
      .def_property_readonly(
          "op_counts", [](const ModelHandle& h) { return opCounts(h.network->graph); },
          "Nodes of the main graph per op type ('domain::Op' outside ai.onnx).")
      .def_property_readonly(
          "opsets", [](const ModelHandle& h) { return h.network->opsets; },
          "Imported opsets: domain ('' is ai.onnx) -> version.")
      .def_property_readonly(
          "parameter_count", [](const ModelHandle& h) { return h.network->graph.parameterCount(); },
          "Elements of every initializer, subgraphs included.")
      .def("inspect", &inspectModel, py::arg("shapes") = py::none(),
           "The model summary as a dict, as `kiln inspect MODEL.onnx --json` prints it; shapes "
           "(dict of input name -> shape) give the FLOPs at those shapes.")
      .def("run", &runModel, py::arg("inputs"),
           "Runs the model on the CPU reference backend (FP32, every node's own kernel): dict "
           "of input name -> array in, dict of output name -> NumPy array out.")
      .def("__repr__", [](const ModelHandle& h) {
        return "<kiln.Model '" + h.path + "' " + std::to_string(h.network->graph.nodes.size()) +
               " nodes>";
      });
}

void defineCalibrationCache(py::module_& m) {
  py::class_<CacheHandle>(m, "CalibrationCache",
                          "INT8 calibration ranges (kiln.calibrate): one symmetric range per "
                          "tensor, as `kiln calibrate` writes them.")
      .def_property_readonly(
          "text", [](const CacheHandle& c) { return formatCalibrationCache(c.table); },
          "The cache file's text, exactly as `kiln calibrate -o CACHE` writes it.")
      .def_property_readonly("ranges", &cacheRanges,
                             "Tensor name -> amax (scale = amax / 127), or 'pin fp16'/'pin fp32'.")
      .def_property_readonly(
          "method", [](const CacheHandle& c) { return c.table.method; },
          "The method the ranges came from: 'entropy', 'minmax', 'percentile 99.99'.")
      .def_property_readonly(
          "samples", [](const CacheHandle& c) { return c.table.samples; },
          "Samples seen (the batch dimension summed over the batches).")
      .def(
          "save",
          [](const CacheHandle& c, const std::filesystem::path& path) {
            check(saveCalibrationCache(c.table, path.string()));
          },
          py::arg("path"), "Writes the cache file (kiln build --int8 --calib-cache PATH reads it).")
      .def("__repr__", [](const CacheHandle& c) {
        return "<kiln.CalibrationCache " + c.table.method + ", " +
               std::to_string(c.table.tensors.size()) + " tensors>";
      });
  m.def(
      "load_calibration_cache",
      [](const std::filesystem::path& path) {
        return CacheHandle{take(loadCalibrationCache(path.string()))};
      },
      py::arg("path"), "Reads a calibration cache file (kiln calibrate's, or an edited one).");
}

}  // namespace

}  // namespace kiln::python

PYBIND11_MODULE(_kiln, m) {
  namespace kp = kiln::python;
  namespace py = pybind11;
  m.doc() =
      "Kiln's Python API: load ONNX models, build, run, inspect and profile plans "
      "(docs/python.md).";
  kp::registerErrors(m);
  m.attr("__version__") = kp::pep440Version();
  m.attr("__git_revision__") = kp::gitRevision();
  m.def(
      "version_report", [] { return kiln::app::versionReport("kiln"); },
      "The report of `kiln --version`: version and commit, the CUDA libraries built against, "
      "and the device found at run time (probes the GPU).");
  kp::defineModel(m);
  kp::defineCalibrationCache(m);
  kp::definePlan(m);
  m.def("load_onnx", &kp::loadOnnx, py::arg("path"), py::arg("check_support") = true,
        "Imports an ONNX model. The importer treats the file as untrusted: a bad file raises "
        "kiln.Error naming it and the node or tensor at fault. check_support=False imports models "
        "with ops Kiln cannot run (for inspect()).");
  m.def("build", &kp::build, py::arg("model"),
        "build(model, **options) -> Plan\n\n"
        "Builds a plan from a kiln.Model or an ONNX path with the options of `kiln build`, "
        "spelled with underscores: fp16, bf16, int8, fp8, no_tf32, strongly_typed (True/False); "
        "backend ('cpu' or 'cuda'), device, calib_cache (a path or a kiln.CalibrationCache), "
        "precision_constraints ('none'|'prefer'|'obey'), layer_precisions and "
        "layer_output_types ({'*': 'fp16', 'Conv_3': 'fp32'} or '*:fp16,Conv_3:fp32'), "
        "constraints (a file), min_shapes/opt_shapes/max_shapes ({'in': (1, 3, 224, 224)}; a list "
        "of dicts for several profiles), optimization_level (0..5), workspace (MiB), "
        "tactic_sources, profiling_verbosity, timing_cache, save_tactics, load_tactics, seed, "
        "disable_pass (a name or a list). progress=callable(dict) is called per build step "
        "(phase, done, total, item); raising in it stops the build. Releases the GIL; Ctrl-C "
        "cancels between layers.");
  m.def("calibrate", &kp::calibrate, py::arg("model"), py::arg("batches"),
        py::arg("method") = "entropy", py::arg("percentile") = 99.99, py::arg("backend") = "",
        py::arg("device") = 0,
        "calibrate(model, batches, method='entropy') -> CalibrationCache\n\n"
        "INT8 calibration from any iterable of batches (dicts of input name -> NumPy array, or "
        "arrays for a one-input model), as TensorRT's Python calibrators take them. The same "
        "batches give the cache `kiln calibrate --data DIR --batch N` writes. method: entropy, "
        "minmax or percentile (percentile=99.99); backend '' (the GPU when usable, else the "
        "CPU), 'cpu' or 'cuda'. The batches are read (and copied) before calibration starts. "
        "Releases the GIL; Ctrl-C cancels between batches.");
  m.def("compare", &kp::compareSides, py::arg("a"), py::arg("b") = py::none(),
        py::arg("inputs") = py::none(), py::arg("shapes") = py::none(), py::arg("seed") = 1,
        py::arg("runs") = 1, py::arg("atol") = py::none(), py::arg("rtol") = py::none(),
        py::arg("per_tensor") = false, py::arg("top_k") = 5, py::arg("backend_a") = "",
        py::arg("backend_b") = "", py::arg("precision_a") = "", py::arg("precision_b") = "",
        py::arg("device") = 0,
        "Accuracy of a against b (the expected side), as `kiln compare A [B] --json`: a and b "
        "are Plans, Models or paths; without b a plan is compared with its own network on the "
        "CPU reference in FP32. inputs: a dict (or a list of dicts) of arrays; otherwise runs "
        "random sets from seed, seed+1, ... at shapes (default: a plan's profile 0 opt shapes). "
        "Returns the report as a dict ('pass' tells whether every output is within tolerance).");
  m.def("compare_builds", &kp::compareBuilds,
        "Side-by-side builds aligned through ONNX provenance (Plans, plan paths or trtexec "
        "exports), as `kiln compare --builds P1 P2 --json`.");
  m.def("load_plugins", &kp::loadPlugins, py::arg("paths"),
        "Loads plugin libraries (a path or a list), as `kiln --plugins LIB.so`; returns every "
        "registered plugin creator. Loading the same file twice is a no-op.");
  m.def("plugins", &kp::pluginList,
        "The registered plugin creators: name, version, namespace, library and fields.");
  m.def("list_passes", &kp::passList,
        "The graph passes (`kiln build --list-passes`): name, minimum optimization level, "
        "description; build(disable_pass=...) takes their names.");
}
