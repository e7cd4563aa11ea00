#include "cli/tensor_args.h"

#include <random>

#include "cli/args.h"
#include "kiln/tensor_io.h"
#include "kiln/tensor_size.h"

namespace kiln::cli {
namespace {

Status splitNameValue(const std::string& item, std::string* name, std::string* value) {
  const size_t colon = item.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return invalidArgument("expected NAME:VALUE, got '" + item + "'");
  *name = item.substr(0, colon);
  *value = item.substr(colon + 1);
  return Status::ok();
}

Status parseShape(const std::string& text, Shape* shape) {
  shape->clear();
  if (text == "scalar" || text.empty()) return Status::ok();
  for (const std::string& dim : splitList(text, 'x')) {
    try {
      size_t used = 0;
      int64_t v = std::stoll(dim, &used);
      if (used != dim.size() || v < 0) throw std::invalid_argument(dim);
      shape->push_back(v);
    } catch (...) {
      return invalidArgument("bad shape '" + text + "' (expected e.g. 1x3x224x224)");
    }
  }
  return Status::ok();
}

}  // namespace

Status parseShapeList(const std::string& text, std::map<std::string, Shape>* out) {
  for (const std::string& item : splitList(text)) {
    std::string name, value;
    KILN_RETURN_IF_ERROR(splitNameValue(item, &name, &value));
    KILN_RETURN_IF_ERROR_CTX(parseShape(value, &(*out)[name]), "--shapes " + name);
  }
  return Status::ok();
}

Status parseFileList(const std::string& text, std::map<std::string, std::string>* out) {
  for (const std::string& item : splitList(text)) {
    std::string name, value;
    KILN_RETURN_IF_ERROR(splitNameValue(item, &name, &value));
    (*out)[name] = value;
  }
  return Status::ok();
}

Status prepareInputs(const Graph& graph, const std::map<std::string, Shape>& shapes,
                     const std::map<std::string, std::string>& files, uint32_t seed,
                     std::map<std::string, Tensor>* inputs) {
  std::mt19937 rng(seed);
  for (const auto& [name, path] : files) {
    if (!graph.findValueInfo(name))
      return invalidArgument("--load-inputs: '" + name + "' is not an input of the model");
  }
  for (const auto& [name, shape] : shapes) {
    if (!graph.findValueInfo(name))
      return invalidArgument("--shapes: '" + name + "' is not an input of the model");
  }
  for (const ValueInfo& info : graph.inputs) {
    auto file = files.find(info.name);
    if (file != files.end()) {
      KILN_ASSIGN_OR_RETURN(Tensor t, readTensorFile(file->second));
      (*inputs)[info.name] = t;
      continue;
    }
    Shape shape;
    auto given = shapes.find(info.name);
    if (given != shapes.end()) {
      shape = given->second;
    } else {
      for (const DimExpr& d : info.shape) {
        if (!d.isConst()) {
          return invalidArgument("input '" + info.name + "' has dynamic dim '" + d.toString() +
                                 "' (shape " + symbolicShapeToString(info.shape) +
                                 "); give --shapes " + info.name + ":...");
        }
        shape.push_back(d.constValue());
      }
    }
    DataType type = info.type == DataType::kUndefined ? DataType::kFloat32 : info.type;
    if (type == DataType::kString)
      return unsupported("input '" + info.name + "' is a string tensor; load it from a file");
    KILN_ASSIGN_OR_RETURN((*inputs)[info.name],
                          randomInput(type, shape, rng(), "input '" + info.name + "'"));
  }
  return Status::ok();
}

}  // namespace kiln::cli
