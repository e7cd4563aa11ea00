#include "support/hostile_models.h"

namespace kiln::test::hostile {
namespace {

using onnx::TensorProto;

void declare(onnx::ValueInfoProto* v, const std::string& name, int32_t type,
             const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::ModelProto emptyModel(int64_t opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("kiln-hostile-tests");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model.mutable_graph()->set_name("hostile");
  return model;
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, const std::string& name,
                         const std::vector<std::string>& in, const std::vector<std::string>& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : in) n->add_input(i);
  for (const auto& o : out) n->add_output(o);
  return n;
}

void int64Tensor(TensorProto* t, const std::string& name, const std::vector<int64_t>& values) {
  t->set_name(name);
  t->set_data_type(TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// A Constant node yielding float32 [value] as `out`.
void constantNode(onnx::GraphProto* g, const std::string& name, const std::string& out,
                  float value) {
  onnx::NodeProto* n = addNode(g, "Constant", name, {}, {out});
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TensorProto::FLOAT);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_float_data(value);
}

// A graph yielding `out` from an If on `cond` nested `depth` levels deep.
void nestedIf(onnx::GraphProto* g, int depth, const std::string& out) {
  if (depth == 0) {
    constantNode(g, "leaf", out, 1.0f);
    return;
  }
  const std::string level = std::to_string(depth);
  onnx::NodeProto* n = addNode(g, "If", "if_" + level, {"cond"}, {out});
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    body->set_name(std::string(branch) + "_" + level);
    const std::string bodyOut = "v" + level + "_" + branch;
    if (std::string(branch) == "then_branch")
      nestedIf(body, depth - 1, bodyOut);
    else
      constantNode(body, "else_" + level, bodyOut, static_cast<float>(depth));
    declare(body->add_output(), bodyOut, TensorProto::FLOAT, {1});
  }
}

}  // namespace

onnx::ModelProto identityModel(const std::vector<int64_t>& dims, int32_t type) {
  onnx::ModelProto model = emptyModel();
  onnx::GraphProto* g = model.mutable_graph();
  declare(g->add_input(), "x", type, dims);
  declare(g->add_output(), "y", type, dims);
  addNode(g, "Identity", "identity", {"x"}, {"y"});
  return model;
}

onnx::ModelProto reshapeFromConstant(const std::vector<int64_t>& target) {
  onnx::ModelProto model = emptyModel();
  onnx::GraphProto* g = model.mutable_graph();
  declare(g->add_input(), "x", TensorProto::FLOAT, {2});
  onnx::NodeProto* c = addNode(g, "Constant", "target", {}, {"shape"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  int64Tensor(a->mutable_t(), "", target);
  addNode(g, "Reshape", "reshape", {"x", "shape"}, {"r"});
  addNode(g, "Softmax", "softmax", {"r"}, {"y"});
  g->add_output()->set_name("y");
  return model;
}

onnx::ModelProto padModel(const std::vector<int64_t>& pads) {
  onnx::ModelProto model = emptyModel(13);
  onnx::GraphProto* g = model.mutable_graph();
  declare(g->add_input(), "x", TensorProto::FLOAT, {2, 2});
  int64Tensor(g->add_initializer(), "pads", pads);
  addNode(g, "Pad", "pad", {"x", "pads"}, {"y"});
  g->add_output()->set_name("y");
  return model;
}

onnx::ModelProto col2ImModel(const std::vector<int64_t>& imageShape) {
  onnx::ModelProto model = emptyModel(18);
  onnx::GraphProto* g = model.mutable_graph();
  declare(g->add_input(), "x", TensorProto::FLOAT, {1, 18, 4});
  int64Tensor(g->add_initializer(), "image", imageShape);
  int64Tensor(g->add_initializer(), "block", {3, 3});
  addNode(g, "Col2Im", "col2im", {"x", "image", "block"}, {"y"});
  g->add_output()->set_name("y");
  return model;
}

onnx::ModelProto opsetModel(int64_t version) {
  onnx::ModelProto model = identityModel({2});
  model.mutable_opset_import(0)->set_version(version);
  return model;
}

onnx::ModelProto nestedIfModel(int depth) {
  onnx::ModelProto model = emptyModel();
  onnx::GraphProto* g = model.mutable_graph();
  declare(g->add_input(), "cond", TensorProto::BOOL, {});
  nestedIf(g, depth, "y");
  declare(g->add_output(), "y", TensorProto::FLOAT, {1});
  return model;
}

onnx::ModelProto wrappedInitializerModel() {
  onnx::ModelProto model = identityModel({2});
  onnx::GraphProto* g = model.mutable_graph();
  TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(kWrapsToTwo);
  w->set_raw_data(std::string(8, '\0'));
  addNode(g, "Identity", "use_w", {"w"}, {"w_out"});
  return model;
}

onnx::ModelProto outputNeverProducedModel() {
  onnx::ModelProto model = identityModel({2});
  declare(model.mutable_graph()->add_output(), "ghost", TensorProto::FLOAT, {2});
  return model;
}

onnx::ModelProto splitWithoutOutputsModel() {
  onnx::ModelProto model = identityModel({2});
  addNode(model.mutable_graph(), "Split", "split", {"x"}, {});
  return model;
}

onnx::ModelProto emptyInputNameModel() {
  onnx::ModelProto model = identityModel({2});
  declare(model.mutable_graph()->add_input(), "", TensorProto::FLOAT, {2});
  return model;
}

std::string serialized(const onnx::ModelProto& model) {
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

std::string npyBytes(const std::string& descr, const std::vector<int64_t>& shape,
                     size_t dataBytes) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + std::string(dataBytes, '\0');
}

}  // namespace kiln::test::hostile
