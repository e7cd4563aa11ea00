#include "onnx_mutator.h"

#include <limits>
#include <string>

namespace kiln::fuzz {

int64_t interestingInt(Rng& rng) {
  static const int64_t kValues[] = {0,
                                    1,
                                    2,
                                    3,
                                    -1,
                                    -2,
                                    7,
                                    64,
                                    255,
                                    256,
                                    65536,
                                    int64_t{1} << 31,
                                    (int64_t{1} << 32) + 17,
                                    int64_t{1} << 40,
                                    int64_t{1} << 62,
                                    6148914691236517206,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min()};
  if (rng() % 3 == 0) return static_cast<int64_t>(rng() % 16) - 4;
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

float interestingFloat(Rng& rng) {
  static const float kValues[] = {0.0f,
                                  -0.0f,
                                  1.0f,
                                  -1.0f,
                                  0.5f,
                                  1e-30f,
                                  1e30f,
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min()};
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

namespace {

void mutateShape(onnx::TensorShapeProto* shape, Rng& rng) {
  if (shape->dim_size() == 0 || rng() % 8 == 0) {
    shape->add_dim()->set_dim_value(interestingInt(rng));
    return;
  }
  auto* dim = shape->mutable_dim(static_cast<int>(rng() % shape->dim_size()));
  switch (rng() % 4) {
    case 0:
      dim->set_dim_param(rng() % 2 ? "batch" : "n");
      break;
    case 1:
      shape->mutable_dim()->RemoveLast();
      break;
    default:
      dim->set_dim_value(interestingInt(rng));
  }
}

// A graph input, output or value_info's type: its dims or element type.
void mutateValueInfo(onnx::ValueInfoProto* info, Rng& rng) {
  auto* tensorType = info->mutable_type()->mutable_tensor_type();
  if (rng() % 4 == 0) {
    tensorType->set_elem_type(static_cast<int>(interestingInt(rng) % 32));
    return;
  }
  mutateShape(tensorType->mutable_shape(), rng);
}

void mutateAttribute(onnx::AttributeProto* attr, Rng& rng) {
  switch (rng() % 6) {
    case 0:
      attr->set_i(interestingInt(rng));
      break;
    case 1:
      attr->set_f(interestingFloat(rng));
      break;
    case 2:
      if (attr->ints_size() > 0 && rng() % 2)
        attr->set_ints(static_cast<int>(rng() % attr->ints_size()), interestingInt(rng));
      else
        attr->add_ints(interestingInt(rng));
      break;
    case 3:
      if (attr->floats_size() > 0 && rng() % 2)
        attr->set_floats(static_cast<int>(rng() % attr->floats_size()), interestingFloat(rng));
      else
        attr->add_floats(interestingFloat(rng));
      break;
    case 4:
      // Any valid AttributeType (0..14); protobuf asserts on values outside the enum.
      attr->set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 15));
      break;
    default:
      if (attr->ints_size() > 0) attr->mutable_ints()->RemoveLast();
  }
}

void mutateInitializer(onnx::TensorProto* tensor, Rng& rng) {
  switch (rng() % 5) {
    case 0:
      tensor->set_data_type(static_cast<int32_t>(interestingInt(rng) % 32));
      break;
    case 1:
      tensor->add_dims(interestingInt(rng));
      break;
    case 2:
      if (tensor->raw_data().size() > 1)
        tensor->mutable_raw_data()->resize(rng() % tensor->raw_data().size());
      break;
    default:
      if (tensor->dims_size() > 0)
        tensor->set_dims(static_cast<int>(rng() % tensor->dims_size()), interestingInt(rng));
      else
        tensor->add_dims(interestingInt(rng));
  }
}

void mutateNode(onnx::GraphProto* graph, Rng& rng) {
  auto* node = graph->mutable_node(static_cast<int>(rng() % graph->node_size()));
  switch (rng() % 4) {
    case 0:
    case 1:
      if (node->attribute_size() > 0) {
        mutateAttribute(node->mutable_attribute(static_cast<int>(rng() % node->attribute_size())),
                        rng);
        return;
      }
      [[fallthrough]];
    case 2:
      // Another node's output (or a graph input) as this node's input.
      if (node->input_size() > 0) {
        const auto& other = graph->node(static_cast<int>(rng() % graph->node_size()));
        const std::string name = other.output_size() > 0 ? other.output(0) : std::string();
        node->set_input(static_cast<int>(rng() % node->input_size()), name);
        return;
      }
      [[fallthrough]];
    default:
      if (node->input_size() > 0 && rng() % 2)
        node->mutable_input()->RemoveLast();
      else
        node->add_input(node->input_size() > 0 ? node->input(0) : std::string());
  }
}

}  // namespace

// One structural change to `model`; false when it has nothing of the kind picked.
bool mutateOnnxModel(onnx::ModelProto* model, Rng& rng) {
  onnx::GraphProto* graph = model->mutable_graph();
  switch (rng() % 8) {
    case 0:
      if (model->opset_import_size() == 0) return false;
      model->mutable_opset_import(static_cast<int>(rng() % model->opset_import_size()))
          ->set_version(rng() % 2 ? interestingInt(rng) : static_cast<int64_t>(rng() % 30));
      return true;
    case 1:
      if (graph->input_size() == 0) return false;
      mutateValueInfo(graph->mutable_input(static_cast<int>(rng() % graph->input_size())), rng);
      return true;
    case 2:
      if (graph->output_size() == 0) return false;
      mutateValueInfo(graph->mutable_output(static_cast<int>(rng() % graph->output_size())), rng);
      return true;
    case 3:
      if (graph->value_info_size() == 0) return false;
      mutateValueInfo(graph->mutable_value_info(static_cast<int>(rng() % graph->value_info_size())),
                      rng);
      return true;
    case 4:
      if (graph->initializer_size() == 0) return false;
      mutateInitializer(
          graph->mutable_initializer(static_cast<int>(rng() % graph->initializer_size())), rng);
      return true;
    case 5:
      model->set_ir_version(rng() % 2 ? interestingInt(rng) : static_cast<int64_t>(rng() % 12));
      return true;
    default:
      if (graph->node_size() == 0) return false;
      mutateNode(graph, rng);
      return true;
  }
}

}  // namespace kiln::fuzz
