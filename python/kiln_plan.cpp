// kiln.Plan and kiln.load_plan: a built plan from Python. Runs on the backend it was
// built for: the CPU reference with its tactics and precisions, or the CUDA runtime
// (NumPy in and out; DLPack device tensors bound without copies).
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "engine_inspector.h"
#include "engine_report.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_plan_options.h"
#include "kiln/cuda_runtime.h"
#include "kiln/plan_signature.h"
#include "kiln/plugin_registry.h"
#include "kiln/reference_backend.h"
#include "kiln_python.h"
#include "plan/plan_metadata.h"
#include "plan_profiler.h"

#ifdef KILN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace kiln::python {

// The CUDA engine of a plan (weights uploaded once) and its one execution context.
struct PlanHandle::CudaState {
  std::mutex mutex;  // one run at a time per plan object
  std::shared_ptr<cuda::Engine> engine;
  std::unique_ptr<cuda::ExecutionContext> context;
};

namespace {

// ---- DLPack (the ABI of dlpack.h v0.8, which every producer still exports) --------------

struct DLDevice {
  int32_t deviceType;  // 1 CPU, 2 CUDA
  int32_t deviceId;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 6 bool
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byteOffset;
};
struct DLManagedTensor {
  DLTensor tensor;
  void* managerContext;
  void (*deleter)(DLManagedTensor*);
};
constexpr int32_t kDLCuda = 2;

bool onCudaDevice(const py::handle& object) {
  if (py::isinstance<py::array>(object) || !py::hasattr(object, "__dlpack_device__")) return false;
  return object.attr("__dlpack_device__")().cast<std::pair<int, int>>().first == kDLCuda;
}

DataType typeOfDlpack(const DLDataType& t) {
  if (t.lanes != 1) return DataType::kUndefined;
  switch (t.code) {
    case 2:
      return t.bits == 32   ? DataType::kFloat32
             : t.bits == 16 ? DataType::kFloat16
             : t.bits == 64 ? DataType::kFloat64
                            : DataType::kUndefined;
    case 4:  // kDLBfloat
      return t.bits == 16 ? DataType::kBFloat16 : DataType::kUndefined;
    case 0:
      return t.bits == 8    ? DataType::kInt8
             : t.bits == 32 ? DataType::kInt32
             : t.bits == 64 ? DataType::kInt64
                            : DataType::kUndefined;
    case 1:
      return t.bits == 8 ? DataType::kUInt8 : DataType::kUndefined;
    case 6:
      return t.bits == 8 ? DataType::kBool : DataType::kUndefined;
    default:
      return DataType::kUndefined;
  }
}

// A CUDA tensor taken through __dlpack__(stream=...): its device pointer, kept valid
// until this object goes (the producer's deleter runs then).
class DeviceTensor {
 public:
  DeviceTensor(const py::handle& object, intptr_t stream, const std::string& name) {
    m_capsule = object.attr("__dlpack__")(py::arg("stream") = stream);
    m_managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(m_capsule.ptr(), "dltensor"));
    if (!m_managed) throw py::error_already_set();
    PyCapsule_SetName(m_capsule.ptr(), "used_dltensor");  // we own it now
    const DLTensor& t = m_managed->tensor;
    m_type = typeOfDlpack(t.dtype);
    if (m_type == DataType::kUndefined)
      throw Error(invalidArgument(name + ": DLPack dtype (code " + std::to_string(t.dtype.code) +
                                  ", " + std::to_string(t.dtype.bits) + " bits) has no Kiln type"));
    m_shape.assign(t.shape, t.shape + t.ndim);
    int64_t expected = 1;  // row-major and dense: what the engine's bindings hold
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.strides && m_shape[i] != 1 && t.strides[i] != expected)
        throw Error(invalidArgument(name + " is not contiguous: pass .contiguous()"));
      expected *= m_shape[i];
    }
    m_device = t.device.deviceId;
    m_data = static_cast<char*>(t.data) + t.byteOffset;
  }
  ~DeviceTensor() {
    if (m_managed && m_managed->deleter) m_managed->deleter(m_managed);
  }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void* data() const { return m_data; }
  DataType type() const { return m_type; }
  const Shape& shape() const { return m_shape; }
  int device() const { return m_device; }

 private:
  py::object m_capsule;
  DLManagedTensor* m_managed = nullptr;
  void* m_data = nullptr;
  DataType m_type = DataType::kUndefined;
  Shape m_shape;
  int m_device = 0;
};

// ---- running ---------------------------------------------------------------------------------

void checkInputsInProfile(const PlanHandle& h, int profile,
                          const std::map<std::string, Shape>& shapes) {
  const Plan& plan = *h.plan;
  if (plan.profiles.empty()) return;
  if (profile < 0 || profile >= static_cast<int>(plan.profiles.size()))
    throw Error(invalidArgument(h.title + ": profile " + std::to_string(profile) +
                                ": the plan has " + std::to_string(plan.profiles.size()) +
                                " profiles"));
  for (const auto& [name, shape] : shapes)
    check(checkShapeInProfile(plan.profiles[profile], profile, name, shape), h.title);
}

std::map<std::string, Shape> shapesOf(const std::map<std::string, Tensor>& tensors) {
  std::map<std::string, Shape> out;
  for (const auto& [name, t] : tensors) out[name] = t.shape();
  return out;
}

py::dict runCpu(const PlanHandle& h, const py::dict& inputs, int profile) {
  const Plan& plan = *h.plan;
  check(checkPlanCompatible(plan.identity, cpuPlanIdentity()), h.title);
  auto tensors = tensorsFromDict(inputs, plan.network->graph);
  checkInputsInProfile(h, profile, shapesOf(tensors));
  return runReference(*plan.network, tensors, plan.layers, h.title);
}

// The plan's engine and context, created at the first CUDA run (weights uploaded once).
cuda::ExecutionContext& cudaContext(PlanHandle& h, int device) {
  if (h.cuda && h.cuda->context) return *h.cuda->context;
  const Plan& plan = *h.plan;
  check(checkPlanCompatible(plan.identity, cuda::cudaPlanIdentity(cuda::probeCudaDevice(device))),
        h.title);
  const cuda::DeviceInfo info = cuda::probeCudaDevice(device);
  if (!info.available) throw Error(unsupported("CUDA backend unavailable: " + info.reason));
  PlanHandle::CudaState& state = *h.cuda;  // runCuda holds its mutex
  state.engine = take(cuda::createEngineForPlan(plan, device), h.title);
  state.context = take(state.engine->createContext(), h.title);
  return *state.context;
}

void synchronize(void* stream) {
#ifdef KILN_HAVE_CUDA
  if (cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream)); e != cudaSuccess)
    throw Error(Status(StatusCode::kInternal,
                       std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e)));
#else
  (void)stream;
#endif
}

// A bound device tensor must be on the plan's device and of the binding's type.
void checkDeviceTensor(cuda::ExecutionContext& context, const DeviceTensor& t,
                       const std::string& name, int device, const std::string& title) {
  const DataType want = take(context.bindingType(name), title);
  if (t.type() != want)
    throw Error(invalidArgument(title + ": '" + name + "' is " + dataTypeName(t.type()) +
                                "; the plan binds " + dataTypeName(want)));
  if (t.device() != device)
    throw Error(invalidArgument(title + ": '" + name + "' is on CUDA device " +
                                std::to_string(t.device()) + "; the plan runs on device " +
                                std::to_string(device)));
}

// CUDA: host arrays are copied in and out; DLPack device tensors (inputs, and
// preallocated `outputs`) are bound by address. With device tensors the run goes on
// `stream` (a cudaStream_t as an int; default the legacy default stream, 1), which the
// producers are asked to order their work before (the DLPack stream protocol); without
// an explicit stream the call waits for the run.
py::dict runCuda(PlanHandle& h, const py::dict& inputs, const py::dict& outputs, int profile,
                 int device, const py::object& streamArg) {
  if (!h.cuda) h.cuda = std::make_shared<PlanHandle::CudaState>();
  std::shared_ptr<PlanHandle::CudaState> keep = h.cuda;
  std::lock_guard<std::mutex> lock(keep->mutex);
  cuda::ExecutionContext& context = cudaContext(h, device);
  const Graph& graph = h.plan->network->graph;
  const intptr_t stream = streamArg.is_none() ? 1 : streamArg.cast<intptr_t>();
  std::vector<std::unique_ptr<DeviceTensor>> bound;
  py::dict hostInputs;
  std::map<std::string, Shape> shapes;
  for (const auto& [key, value] : inputs) {
    const std::string name = py::str(key);
    if (!onCudaDevice(value)) {
      hostInputs[key] = value;
      continue;
    }
    bound.push_back(std::make_unique<DeviceTensor>(value, stream, "input '" + name + "'"));
    shapes[name] = bound.back()->shape();
  }
  auto host = tensorsFromDict(hostInputs, graph);
  for (const auto& [name, t] : host) shapes[name] = t.shape();
  checkInputsInProfile(h, profile, shapes);
  for (const auto& [name, shape] : shapes) check(context.setInputShape(name, shape), h.title);
  // Inputs: device tensors by address, host arrays copied (synchronously).
  for (const ValueInfo& input : graph.inputs) check(context.setTensorAddress(input.name, nullptr));
  size_t next = 0;
  for (const auto& [key, value] : inputs) {
    const std::string name = py::str(key);
    if (host.count(name)) {
      check(context.setInput(name, host.at(name)), h.title);
      continue;
    }
    const DeviceTensor& t = *bound[next++];
    checkDeviceTensor(context, t, name, device, h.title);
    check(context.setTensorAddress(name, t.data()), h.title);
  }
  // Outputs the caller preallocated on the device; the rest come back as NumPy arrays.
  for (const ValueInfo& output : graph.outputs)
    check(context.setTensorAddress(output.name, nullptr));
  std::set<std::string> deviceOutputs;
  for (const auto& [key, value] : outputs) {
    const std::string name = py::str(key);
    if (!onCudaDevice(value))
      throw Error(invalidArgument("output '" + name + "': outputs= takes CUDA tensors (DLPack)"));
    bound.push_back(std::make_unique<DeviceTensor>(value, stream, "output '" + name + "'"));
    const Shape want = take(context.outputShape(name), h.title);
    if (bound.back()->shape() != want)
      throw Error(invalidArgument(h.title + ": output '" + name + "' has shape " +
                                  shapeToString(bound.back()->shape()) + "; the run writes " +
                                  shapeToString(want)));
    checkDeviceTensor(context, *bound.back(), name, device, h.title);
    check(context.setTensorAddress(name, bound.back()->data()), h.title);
    deviceOutputs.insert(name);
  }
  const bool anyDevice = !bound.empty();
  const bool wait = anyDevice && streamArg.is_none();
  void* runStream = anyDevice ? reinterpret_cast<void*>(stream) : nullptr;
  std::vector<NamedTensor> results;
  Status ran;
  {
    py::gil_scoped_release release;
    ran = anyDevice ? context.enqueue(runStream) : context.execute();
    for (const ValueInfo& output : graph.outputs) {
      if (!ran.isOk() || deviceOutputs.count(output.name)) continue;
      auto t = context.getOutput(output.name, runStream);
      if (!t.isOk()) {
        ran = t.status();
        break;
      }
      results.push_back({output.name, std::move(t.value())});
    }
    if (ran.isOk() && wait) synchronize(runStream);
  }
  check(ran, h.title);
  py::dict out;
  for (const NamedTensor& t : results) out[py::str(t.name)] = arrayFromTensor(t.tensor);
  for (const auto& [key, value] : outputs) out[key] = value;
  return out;
}

py::dict run(PlanHandle& h, const py::dict& inputs, const py::object& outputs, int profile,
             int device, const py::object& stream) {
  check(checkPluginsAvailable(*h.plan->network), h.title);
  const py::dict outs = outputs.is_none() ? py::dict() : outputs.cast<py::dict>();
  if (h.plan->identity.backend == "cuda") return runCuda(h, inputs, outs, profile, device, stream);
  if (!outs.empty() || !stream.is_none())
    throw Error(invalidArgument(h.title + ": outputs= and stream= apply to CUDA plans"));
  return runCpu(h, inputs, profile);
}

// ---- reports ----------------------------------------------------------------------------------

py::object profile(const PlanHandle& h, int iterations, uint64_t seed, bool onCpu) {
  if (iterations < 1) throw Error(invalidArgument("iterations must be >= 1"));
  check(checkPluginsAvailable(*h.plan->network), h.title);
  std::atomic<bool> cancel{false};
  std::optional<Result<nlohmann::json>> result;
  runInterruptible(
      [&] {
        result.emplace(onCpu ? inspector::profilePlanOnCpu(*h.plan, iterations, seed, &cancel, {})
                             : inspector::profilePlan(*h.plan, iterations, seed, &cancel, {}));
      },
      &cancel);
  check(result->status(), h.title);
  return jsonToPython(result->value().dump());
}

py::object layerReport(const PlanHandle& h, const py::object& profileDoc) {
  inspector::EngineReport report = inspector::reportFromPlan(*h.plan, h.title);
  if (!profileDoc.is_none()) {
    const std::string text =
        py::module_::import("json").attr("dumps")(profileDoc).cast<std::string>();
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) throw Error(invalidArgument("profile is not JSON"));
    check(inspector::applyProfile(doc, &report), "profile");
  }
  return jsonToPython(inspector::reportJson(report).dump());
}

py::list profilesList(const Plan& plan) {
  py::list out;
  for (const OptimizationProfile& p : plan.profiles) {
    py::dict inputs;
    for (const auto& [name, range] : p.inputs)
      inputs[py::str(name)] = py::dict(py::arg("min") = range.min, py::arg("opt") = range.opt,
                                       py::arg("max") = range.max);
    out.append(inputs);
  }
  return out;
}

std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

PlanHandle loadPlan(const std::filesystem::path& file) {
  const std::string path = file.string();
  std::optional<Result<Plan>> plan;
  {
    py::gil_scoped_release release;
    plan.emplace(loadPlanFile(path));
  }
  return {std::make_shared<const Plan>(take(std::move(*plan))), path, nullptr};
}

}  // namespace

void definePlan(py::module_& m) {
  py::class_<PlanHandle>(m, "Plan",
                         "A built engine (kiln.build, kiln.load_plan): run it, save it, read its "
                         "BuildRecord and inspector report, profile its layers.")
      .def_readonly("title", &PlanHandle::title, "The file or model that names it in errors.")
      .def_property_readonly(
          "backend", [](const PlanHandle& h) { return h.plan->identity.backend; },
          "'cpu' or 'cuda': where it runs.")
      .def_property_readonly(
          "device", [](const PlanHandle& h) { return h.plan->identity.deviceName; },
          "The device it was built for.")
      .def_property_readonly(
          "identity",
          [](const PlanHandle& h) {
            return jsonToPython(dump(plan::metadataToJson(*h.plan)["identity"]));
          },
          "The plan header's identity: backend, device, compute capability, library versions.")
      .def_property_readonly(
          "inputs",
          [](const PlanHandle& h) { return valueInfoList(h.plan->network->graph.inputs); },
          "Inputs as dicts: name, dtype, shape (symbolic dims as strings).")
      .def_property_readonly(
          "outputs",
          [](const PlanHandle& h) { return valueInfoList(h.plan->network->graph.outputs); },
          "Outputs, as inputs.")
      .def_property_readonly(
          "profiles", [](const PlanHandle& h) { return profilesList(*h.plan); },
          "Optimization profiles: per profile, input name -> {'min', 'opt', 'max'}.")
      .def_property_readonly(
          "record",
          [](const PlanHandle& h) {
            return jsonToPython(dump(plan::metadataToJson(*h.plan)["record"]));
          },
          "The BuildRecord as a dict, as the plan file stores it: config, per layer its source "
          "nodes, fusion, precision and reason, tactic candidates and winner, memory; passes, "
          "warnings, timing-cache statistics.")
      .def(
          "save",
          [](const PlanHandle& h, const std::filesystem::path& path, const py::object& sign) {
            check(savePlan(*h.plan, path.string()));
            if (!sign.is_none()) check(signPlanFile(path.string(), py::str(sign)));
          },
          py::arg("path"), py::arg("sign") = py::none(),
          "Writes the .kiln file; sign=KEY.key also writes PATH.sig (kiln keygen, "
          "docs/security.md).")
      .def("run", &run, py::arg("inputs"), py::arg("outputs") = py::none(), py::arg("profile") = 0,
           py::arg("device") = 0, py::arg("stream") = py::none(),
           "run(inputs) -> dict of output name -> NumPy array\n\n"
           "Runs on the plan's backend with its tactics and precisions. inputs: dict of input "
           "name -> NumPy array (or any array-like; CPU DLPack tensors are viewed without a "
           "copy). Shapes must lie in optimization profile `profile`. CUDA plans also take CUDA "
           "tensors with __dlpack__ (PyTorch, CuPy) by address, without copies; outputs= binds "
           "preallocated CUDA tensors for outputs (returned as given), and stream= (a "
           "cudaStream_t as an int) makes the call asynchronous on that stream. Errors raise "
           "kiln.Error naming the plan and the tensor. CPU runs release the GIL and Ctrl-C stops "
           "them between layers.")
      .def("profile", &profile, py::arg("iterations") = 10, py::arg("seed") = 1,
           py::arg("on_cpu") = false,
           "Per-layer times over `iterations` runs on seeded random inputs at the first "
           "profile's opt shapes, as `kiln run PLAN --export-profile` writes them: "
           "[{'count': N}, {'name', 'timeMs', 'averageMs', 'medianMs', 'percentage'}, ...]. "
           "on_cpu=True runs a CUDA plan's layers on the CPU reference.")
      .def(
          "report",
          [](const PlanHandle& h) {
            return jsonToPython(dump(inspector::engineInspectorJson(*h.plan)));
          },
          "The engine inspector JSON as a dict, as `kiln inspect PLAN.kiln --json` prints it "
          "(TensorRT's IEngineInspector keys plus Kiln's).")
      .def("layer_report", &layerReport, py::arg("profile") = py::none(),
           "The engine report (the studio's layer table) as a dict; profile= (plan.profile()'s "
           "list) puts measured times on the layers.")
      .def(
          "summary", [](const PlanHandle& h) { return inspector::formatBuildSummary(*h.plan); },
          "The build summary `kiln inspect PLAN.kiln` prints.")
      .def("__repr__", [](const PlanHandle& h) {
        return "<kiln.Plan '" + h.title + "' " + h.plan->identity.backend + ", " +
               std::to_string(h.plan->layers.size()) + " layers>";
      });
  m.def("load_plan", &loadPlan, py::arg("path"),
        "Reads a .kiln plan. A plan is untrusted input: a corrupt or foreign file raises "
        "kiln.Error naming it.");
}

}  // namespace kiln::python
