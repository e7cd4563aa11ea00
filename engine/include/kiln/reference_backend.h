// The CPU reference backend: runs a Network node by node with the reference
// kernels. It is the ground truth that every other backend is checked against,
// so it favours exactness over speed (BLAS still does the GEMMs).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/build_record.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct ReferenceRunOptions {
  // Called after each top-level node with its wall time in milliseconds.
  std::function<void(const Node& node, double milliseconds)> onNodeTimed;
  // Names of intermediate values to return besides the graph outputs.
  std::vector<std::string> extraOutputs;
  // Polled between nodes; the run stops with kCancelled when it becomes true.
  const std::atomic<bool>* cancel = nullptr;
  // Empty: every node runs its reference kernel in its own types. Otherwise one
  // entry per top-level node (a plan's choices); an unknown tactic is an error.
  std::vector<LayerImplementation> layerImplementations;
};

Status runReferenceNode(const Node& node, const std::map<std::string, Tensor>& values,
                        std::vector<Tensor>* outputs);

class ReferenceBackend {
 public:
  // `network` must outlive the backend.
  explicit ReferenceBackend(const Network& network);
  ~ReferenceBackend();

  // Checks every required graph input is given with the declared dtype, rank and
  // fixed dims (symbolic dims must agree across inputs), then runs the graph.
  // Outputs come back in graph output order, then the extra outputs.
  Status run(const std::map<std::string, Tensor>& inputs, std::vector<NamedTensor>* outputs,
             const ReferenceRunOptions& options = {});

  // Same checks as run(), without running: for shape/dtype errors up front.
  Status validateInputs(const std::map<std::string, Tensor>& inputs) const;

 private:
  friend Status runReferenceNode(const Node& node, const std::map<std::string, Tensor>& values,
                                 std::vector<Tensor>* outputs);
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Runs one node on the reference kernels. `values` holds every value the node reads
// by name: its inputs and, for If/Loop/Scan, the outer values its subgraphs use.
// Outputs come back in node output order (undefined tensors for omitted outputs).
// Other backends use it for ops they run on the host.
Status runReferenceNode(const Node& node, const std::map<std::string, Tensor>& values,
                        std::vector<Tensor>* outputs);

// Lists every node (recursively, subgraphs included) that has no CPU kernel for
// its domain, op type and opset, as one message per node: "node 'x' (#3, Foo) domain
// 'ai.onnx' opset 17". Empty when everything is supported.
std::vector<std::string> findUnsupportedNodes(const Network& network);
// The same list as statuses (kUnsupported, the same messages) carrying the node as
// fields; a node inside a subgraph is reported about the main-graph node holding it.
std::vector<Status> findUnsupportedNodeStatuses(const Network& network);

// One operator implementation of the reference backend: domain ("" = ai.onnx),
// op type and the inclusive opset range whose semantics it implements.
struct OperatorRange {
  std::string domain;
  std::string opType;
  int sinceVersion = 1;
  int untilVersion = 1000;  // 1000: no newer version known to change it
};
std::vector<OperatorRange> referenceOperators();

}  // namespace kiln
