// Parsing of tensor-related CLI options shared by `run` and `inspect`.
#pragma once

#include <map>
#include <string>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::cli {

// "--shapes in:1x3x224x224,mask:1x128" -> name -> shape. A name may contain ':'
// only before the last one ("a:b:1x2" names "a:b").
Status parseShapeList(const std::string& text, std::map<std::string, Shape>* out);
// "--load-inputs in:x.npy,mask:m.pb" -> name -> file path.
Status parseFileList(const std::string& text, std::map<std::string, std::string>* out);

// Builds one tensor per graph input: loaded from a file when given, else random
// non-zero data (seeded) of the shape given in `shapes` or the declared static shape.
// Symbolic dims without a given shape are an error naming the input and the dim.
Status prepareInputs(const Graph& graph, const std::map<std::string, Shape>& shapes,
                     const std::map<std::string, std::string>& files, uint32_t seed,
                     std::map<std::string, Tensor>* inputs);

}  // namespace kiln::cli
