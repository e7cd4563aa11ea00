// What the translation units of the Python module (kiln._kiln) share: the
// kiln.Error exception, NumPy <-> Tensor conversion, and long calls that release the
// GIL and honour Ctrl-C. docs/python.md describes the API.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>

#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::python {

namespace py = pybind11;

// Thrown by the bindings, translated to kiln.Error (a RuntimeError) with the Status's
// one-line message, its code name as the exception's `code` attribute and its node
// and tensor fields as `node_name`, `node_index`, `node_op_type` and `tensor`.
class Error : public std::runtime_error {
 public:
  explicit Error(const Status& status)
      : std::runtime_error(status.message()),
        m_code(statusCodeName(status.code())),
        m_node(status.node() ? std::optional<StatusNode>(*status.node()) : std::nullopt),
        m_tensor(status.tensor()) {}
  const std::string& code() const { return m_code; }
  const std::optional<StatusNode>& node() const { return m_node; }
  const std::string& tensor() const { return m_tensor; }

 private:
  std::string m_code;
  std::optional<StatusNode> m_node;
  std::string m_tensor;
};

// Registers kiln.Error and the translator of Error into it.
void registerErrors(py::module_& m);

// Throws Error when `status` is not ok (with "context: " prepended when given).
void check(const Status& status, const std::string& context = "");
template <class T>
T take(Result<T> result, const std::string& context = "") {
  check(result.status(), context);
  return std::move(result).value();
}

// A NumPy array (or anything np.asarray takes) as a Tensor, copied. `name` names the
// tensor in errors; `want` (kUndefined: the array's own) converts non-arrays.
Tensor tensorFromArray(const py::handle& object, const std::string& name,
                       DataType want = DataType::kUndefined);
// A Tensor as a NumPy array sharing its storage (the array keeps the tensor alive).
py::array arrayFromTensor(const Tensor& tensor);
// dict of name -> array-like into named tensors, typed as `graph`'s inputs declare.
std::map<std::string, Tensor> tensorsFromDict(const py::dict& inputs, const Graph& graph);

// Runs `network` on the CPU reference (with a plan's `layers`, or each node's own kernel
// when empty) on a worker thread, interruptibly; errors name `title`. Outputs by name.
py::dict runReference(const Network& network, const std::map<std::string, Tensor>& inputs,
                      const std::vector<LayerImplementation>& layers, const std::string& title);

// A graph input or output as {"name", "dtype", "shape"} (symbolic dims as strings).
py::dict valueInfoDict(const ValueInfo& value);
py::list valueInfoList(const std::vector<ValueInfo>& values);
// nlohmann JSON text -> Python objects through json.loads.
py::object jsonToPython(const std::string& text);

// Runs `work` on a worker thread with the GIL released. The calling thread polls for
// signals every 50 ms; on Ctrl-C it sets `cancel` (which `work` passes to the engine),
// waits for the worker to stop and raises KeyboardInterrupt. `work` must not touch
// Python objects except under py::gil_scoped_acquire.
void runInterruptible(const std::function<void()>& work, std::atomic<bool>* cancel);

// A loaded or built plan as Python sees it; `title` names it in errors (its file, or
// the model it was built from).
struct PlanHandle {
  std::shared_ptr<const Plan> plan;
  std::string title;
  struct CudaState;  // the CUDA engine and context, created at the first CUDA run
  std::shared_ptr<CudaState> cuda;
};

// Defines kiln.Plan and kiln.load_plan (kiln_plan.cpp).
void definePlan(py::module_& m);

}  // namespace kiln::python
