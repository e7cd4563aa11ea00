// The op table (kiln/op_table.h): its rows are unique and found, every generic shape form
// has its rule, and a new op made of a row and its kernels alone (com.microsoft QuickGelu:
// engine/ops/op_table.cpp, backends/cpu/ops/gated_activations.cpp,
// backends/cuda/ops/elementwise.cpp) imports, infers its shape, runs on the reference
// backend and gets its TensorRT layer type in a build.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>

#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/onnx_import.h"
#include "kiln/op_table.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"
#include "shape/shape_rules.h"
#include "support/op_test.h"

namespace kiln {
namespace {

TEST(OpTable, EveryRowIsUniqueAndFoundByItsType) {
  std::set<std::string_view> seen;
  for (const ops::OpRow& row : ops::opTable()) {
    EXPECT_TRUE(seen.insert(row.opType).second) << "two rows of " << row.opType;
    EXPECT_EQ(ops::findOp(row.opType), &row) << row.opType;
  }
  EXPECT_GT(seen.size(), 150u);
  EXPECT_EQ(ops::findOp("NoSuchOp"), nullptr);
}

TEST(OpTable, EveryGenericShapeFormHasItsRule) {
  for (const ops::OpRow& row : ops::opTable()) {
    if (row.shape == ops::OpShapeForm::kOwnRule) continue;
    EXPECT_NE(shape::findShapeRule(std::string(row.opType)), nullptr) << row.opType;
  }
}

TEST(OpTable, RowsSayWhatTheReadersUsedToList) {
  const ops::OpRow* relu = ops::findOp("Relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->kind, ops::OpKind::kActivation);
  EXPECT_EQ(relu->shape, ops::OpShapeForm::kSameAsInput);
  EXPECT_EQ(relu->tensorrtLayer, "Activation");
  EXPECT_TRUE(relu->positionwise);
  const ops::OpRow* less = ops::findOp("Less");
  ASSERT_NE(less, nullptr);
  EXPECT_EQ(less->shape, ops::OpShapeForm::kBroadcastToBool);
  EXPECT_FALSE(less->positionwise);  // not taken onto channels-last storage by the pass
  const ops::OpRow* cast = ops::findOp("Cast");
  ASSERT_NE(cast, nullptr);
  EXPECT_TRUE(cast->keepsOwnTypes);
  EXPECT_EQ(cast->shape, ops::OpShapeForm::kOwnRule);
  EXPECT_EQ(ops::findOp("RandomNormal")->kind, ops::OpKind::kOther);  // not a normalization
  EXPECT_EQ(ops::findOp("Softsign")->tensorrtLayer, "Activation");
  EXPECT_EQ(ops::findOp("Atanh")->tensorrtLayer, "Unary");
  const ops::OpRow* chain = ops::findOp("PointwiseChain");
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->domain, "ai.kiln");
  EXPECT_EQ(chain->tensorrtLayer, "PointWiseV2");
}

// y = QuickGelu(x) (com.microsoft, opset 1), x float32 [2, 7], y undeclared.
std::string quickGeluModel(float alpha) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::OperatorSetIdProto* contrib = model.add_opset_import();
  contrib->set_domain("com.microsoft");
  contrib->set_version(1);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("quick_gelu");
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  auto* tensor = x->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_value(2);
  tensor->mutable_shape()->add_dim()->set_dim_value(7);
  g->add_output()->set_name("y");  // no type or shape declared: inference alone gives them
  onnx::NodeProto* node = g->add_node();
  node->set_op_type("QuickGelu");
  node->set_domain("com.microsoft");
  node->set_name("quick_gelu");
  node->add_input("x");
  node->add_output("y");
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(alpha);
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

TEST(OpTable, ANewOpIsItsRowAndItsKernels) {
  const float alpha = 1.5f;
  auto imported = importOnnxBytes(quickGeluModel(alpha), ".", "quick_gelu.onnx");
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  auto network = std::make_shared<const Network>(std::move(imported).value());

  // Shape inference through the row's form (no rule written for the op).
  auto shapes = inferShapes(*network);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().toString();
  const InferredValue& y = shapes.value().values.at("y");
  EXPECT_EQ(y.type, DataType::kFloat32);
  ASSERT_TRUE(y.hasShape);
  EXPECT_EQ(y.shape, (SymbolicShape{DimExpr(2), DimExpr(7)}));

  // The reference kernel: x * sigmoid(alpha * x) on random non-zero data.
  Tensor x = test::randomTensor(DataType::kFloat32, {2, 7}, 31, -4.0, 4.0);
  ReferenceBackend backend(*network);
  std::vector<NamedTensor> outputs;
  ASSERT_TRUE(backend.run({{"x", x}}, &outputs).isOk());
  ASSERT_EQ(outputs.size(), 1u);
  const float* in = x.data<float>();
  const float* out = outputs[0].tensor.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float expected = in[i] / (1.0f + std::exp(-alpha * in[i]));
    EXPECT_NEAR(out[i], expected, 1e-6f + 1e-5f * std::fabs(expected)) << i;
  }

  // A build records TensorRT's layer type from the row.
  auto builder = cpuBuildBackend();
  auto plan = buildPlan(network, BuilderConfig{}, *builder);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan.value().record.layers.size(), 1u);
  EXPECT_EQ(plan.value().record.layers[0].layerType, "Activation");
  EXPECT_EQ(plan.value().record.layers[0].opType, "QuickGelu");
}

}  // namespace
}  // namespace kiln
