// A network whose graph outputs also name some of its intermediate values: how a runtime
// that binds graph outputs only (the CUDA engine) hands back the activations a
// calibrator or a per-tensor comparison asks for. The nodes, and so the layers that run,
// are the source's; only the list of graph outputs grows.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/graph.h"

namespace kiln {

// `source` with each of `names` appended to its graph outputs, in the order given (a name
// that already is a graph output, or is named twice, is kept once), typed as shape
// inference types it (kUndefined where it cannot: the runtime's binding then takes the
// value's own type).
std::shared_ptr<const Network> withGraphOutputs(const Network& source,
                                                const std::vector<std::string>& names);

// The values the top-level nodes write that some node reads and that are not graph
// outputs already, in node order: what a runtime can expose besides its outputs.
std::vector<std::string> readIntermediateValues(const Graph& graph);

}  // namespace kiln
