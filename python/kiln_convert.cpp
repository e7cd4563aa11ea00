// The shared machinery of the Python module (kiln_python.h): kiln.Error and its
// translator, NumPy <-> Tensor conversion, the CPU reference runs the bindings make,
// and long calls that release the GIL and honour Ctrl-C.
#include <pybind11/stl.h>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "kiln/reference_backend.h"
#include "kiln/tensor_size.h"
#include "kiln_python.h"

namespace kiln::python {

// ---- errors ----------------------------------------------------------------------

void registerErrors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  error.attr("__doc__") =
      "A Kiln error: the one-line message `kiln` prints (naming the file, node or tensor at "
      "fault), with the status code name in `code` ('invalid argument', 'not found', ...); "
      "when it is about a node, `node_name`, `node_index` and `node_op_type` name it (else "
      "None), and `tensor` the tensor it is about (else None).";
  for (const char* name : {"code", "node_name", "node_index", "node_op_type", "tensor"})
    error.attr(name) = py::none();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object instance = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      instance.attr("code") = e.code();
      // Model text, not always UTF-8: undecodable bytes become U+FFFD.
      auto text = [](const std::string& s) {
        return py::reinterpret_steal<py::object>(
            PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
      };
      if (e.node()) {
        instance.attr("node_name") = text(e.node()->name);
        instance.attr("node_index") = e.node()->index;
        instance.attr("node_op_type") = text(e.node()->opType);
      }
      if (!e.tensor().empty()) instance.attr("tensor") = text(e.tensor());
      PyErr_SetObject(error.ptr(), instance.ptr());
    } catch (const TensorSizeError& e) {
      py::object instance = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      instance.attr("code") = statusCodeName(StatusCode::kOutOfRange);
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });
}

void check(const Status& status, const std::string& context) {
  if (status.isOk()) return;
  throw Error(context.empty() ? status : status.withContext(context));
}

// ---- NumPy <-> Tensor --------------------------------------------------------------

namespace {

struct TypePair {
  DataType type;
  const char* numpy;
};
constexpr TypePair kNumpyTypes[] = {
    {DataType::kFloat32, "float32"}, {DataType::kFloat16, "float16"},
    {DataType::kFloat64, "float64"}, {DataType::kInt8, "int8"},
    {DataType::kUInt8, "uint8"},     {DataType::kInt16, "int16"},
    {DataType::kUInt16, "uint16"},   {DataType::kInt32, "int32"},
    {DataType::kUInt32, "uint32"},   {DataType::kInt64, "int64"},
    {DataType::kUInt64, "uint64"},   {DataType::kBool, "bool"},
};

std::optional<DataType> typeOfNumpy(const py::dtype& dtype) {
  if (!dtype.attr("isnative").cast<bool>()) return std::nullopt;  // byte-swapped data
  const std::string name = dtype.attr("name").cast<std::string>();
  for (const TypePair& p : kNumpyTypes)
    if (name == p.numpy) return p.type;
  return std::nullopt;
}

const char* numpyOfType(DataType type) {
  for (const TypePair& p : kNumpyTypes)
    if (p.type == type) return p.numpy;
  return nullptr;
}

// Objects with __dlpack__ on the host become NumPy views (np.from_dlpack).
py::object hostArrayOf(const py::handle& object) {
  if (py::isinstance<py::array>(object)) return py::reinterpret_borrow<py::object>(object);
  if (py::hasattr(object, "__dlpack_device__")) {
    const auto device = object.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (device.first != 1)  // kDLCPU
      throw Error(invalidArgument("is on a device (DLPack device type " +
                                  std::to_string(device.first) +
                                  "); only a CUDA plan takes device tensors (copy it to the "
                                  "host for a CPU plan)"));
    return py::module_::import("numpy").attr("from_dlpack")(object);
  }
  return py::none();
}

}  // namespace

Tensor tensorFromArray(const py::handle& object, const std::string& name, DataType want) {
  py::object host;
  try {
    host = hostArrayOf(object);
  } catch (const Error& e) {
    throw Error(invalidArgument(name + " " + e.what()));
  }
  py::module_ np = py::module_::import("numpy");
  if (host.is_none())
    host = want != DataType::kUndefined && numpyOfType(want)
               ? np.attr("asarray")(object, py::arg("dtype") = numpyOfType(want))
               : np.attr("asarray")(object);
  py::array array = py::array::ensure(host, py::array::c_style);  // keeps 0-d arrays 0-d
  if (!array) throw Error(invalidArgument(name + ": not an array"));
  const auto type = typeOfNumpy(array.dtype());
  if (!type)
    throw Error(invalidArgument(name + ": NumPy dtype " +
                                array.dtype().attr("str").cast<std::string>() +
                                " has no Kiln type"));
  Shape shape(array.shape(), array.shape() + array.ndim());
  auto tensor = allocateTensor(*type, shape, name);
  check(tensor.status());
  if (tensor->byteSize() > 0) std::memcpy(tensor->rawData(), array.data(), tensor->byteSize());
  return std::move(tensor).value();
}

py::array arrayFromTensor(const Tensor& tensor) {
  const char* numpy = numpyOfType(tensor.type());
  if (!numpy)
    throw Error(unsupported(std::string("a ") + dataTypeName(tensor.type()) +
                            " tensor has no NumPy dtype"));
  auto* owner = new Tensor(tensor);  // shares the storage; freed with the array
  py::capsule keep(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  const py::dtype dtype = py::dtype::from_args(py::str(numpy));  // np.dtype(name)
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<py::ssize_t> strides(shape.size());  // row-major
  // Not dtype.itemsize(): pybind11 2.10 reads it from NumPy 1's descriptor layout.
  py::ssize_t stride = static_cast<py::ssize_t>(dataTypeSize(tensor.type()));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<py::ssize_t>(shape[i], 1);
  }
  return py::array(dtype, shape, strides, owner->rawData(), keep);
}

std::map<std::string, Tensor> tensorsFromDict(const py::dict& inputs, const Graph& graph) {
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : inputs) {
    const std::string name = py::str(key);
    const ValueInfo* info = nullptr;
    for (const ValueInfo& input : graph.inputs)
      if (input.name == name) info = &input;
    if (!info) {
      std::string names;
      for (const ValueInfo& input : graph.inputs) names += (names.empty() ? "" : ", ") + input.name;
      throw Error(notFound("no graph input named '" + name + "' (inputs: " + names + ")"));
    }
    out[name] = tensorFromArray(value, "input '" + name + "'", info->type);
  }
  return out;
}

py::dict valueInfoDict(const ValueInfo& value) {
  py::list shape;
  for (const DimExpr& d : value.shape) {
    if (d.isConst())
      shape.append(d.constValue());
    else
      shape.append(d.toString());
  }
  py::dict out;
  out["name"] = value.name;
  out["dtype"] = dataTypeName(value.type);
  out["shape"] = value.hasShape ? py::object(shape) : py::object(py::none());
  return out;
}

py::list valueInfoList(const std::vector<ValueInfo>& values) {
  py::list out;
  for (const ValueInfo& v : values) out.append(valueInfoDict(v));
  return out;
}

py::object jsonToPython(const std::string& text) {
  return py::module_::import("json").attr("loads")(text);
}

py::dict runReference(const Network& network, const std::map<std::string, Tensor>& inputs,
                      const std::vector<LayerImplementation>& layers, const std::string& title) {
  std::vector<NamedTensor> outputs;
  Status ran;
  std::atomic<bool> cancel{false};
  runInterruptible(
      [&] {
        ReferenceBackend backend(network);
        ReferenceRunOptions options;
        options.layerImplementations = layers;
        options.cancel = &cancel;
        ran = backend.validateInputs(inputs);
        if (ran.isOk()) ran = backend.run(inputs, &outputs, options);
      },
      &cancel);
  check(ran, title);
  py::dict out;
  for (const NamedTensor& t : outputs) out[py::str(t.name)] = arrayFromTensor(t.tensor);
  return out;
}

// ---- long calls ----------------------------------------------------------------------

void runInterruptible(const std::function<void()>& work, std::atomic<bool>* cancel) {
  std::exception_ptr failure;
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  bool interrupted = false;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      done.set_value();
    });
    while (finished.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      if (interrupted) continue;
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt is now pending
        interrupted = true;
        cancel->store(true);
      }
    }
    worker.join();
  }
  if (interrupted) throw py::error_already_set();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace kiln::python
