// Hostile ONNX models built in code (support/hostile_models.h): sizes that wrap,
// unknown element types, opsets past int, deep nesting, structures a plan cannot
// keep. Each is refused at import with one line naming the value or node, or (a
// legal 32-deep nesting) imported and run.
#include <gtest/gtest.h>

#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "support/hostile_models.h"

namespace kiln {
namespace {

using namespace test::hostile;
using ImporterHostile = FixedLimitsTest;

Status importStatus(const onnx::ModelProto& model) {
  auto net = importOnnxBytes(serialized(model), ".", "hostile.onnx");
  return net.isOk() ? Status::ok() : net.status();
}

void expectRefused(const onnx::ModelProto& model, const std::string& expected) {
  Status s = importStatus(model);
  ASSERT_FALSE(s.isOk()) << "imported a model that should fail with: " << expected;
  EXPECT_EQ(s.message(), expected);
}

TEST_F(ImporterHostile, InputDimsThatWrapAreRefused) {
  // Unchecked, 3 x 6148914691236517206 was a 2-element input: exit 0, or a segfault
  // in Softmax / Transpose / TopK that trusted the dims.
  expectRefused(identityModel({3, kWrapsToTwo}),
                "hostile.onnx: graph input: value 'x': dim 1 (6148914691236517206) exceeds the "
                "limit of 1099511627776");
}

TEST_F(ImporterHostile, InputsPastTheByteCapAreRefused) {
  // 2^62 elements once got a 0-byte buffer that random input generation wrote into.
  expectRefused(identityModel({int64_t{1} << 31, int64_t{1} << 31}),
                "hostile.onnx: graph input: value 'x': shape 2147483648x2147483648 of float32 "
                "needs more than the limit of 68719476736 bytes (KILN_MAX_TENSOR_BYTES)");
}

TEST_F(ImporterHostile, UnknownElementTypesAreRefused) {
  expectRefused(identityModel({2}, 9999),
                "hostile.onnx: graph input: value 'x': element type 9999 is not an ONNX tensor "
                "type");
  expectRefused(identityModel({2}, -7),
                "hostile.onnx: graph input: value 'x': element type -7 is not an ONNX tensor type");
}

TEST_F(ImporterHostile, OpsetsPastIntAreRefused) {
  // 2^32 + 17 was read as opset 17.
  expectRefused(opsetModel((int64_t{1} << 32) + 17),
                "hostile.onnx: opset 4294967313 of ai.onnx is out of range (0..1048576)");
  expectRefused(opsetModel(-3), "hostile.onnx: opset -3 of ai.onnx is out of range (0..1048576)");
}

TEST_F(ImporterHostile, WeightsWhoseDimsWrapAreRefused) {
  expectRefused(wrappedInitializerModel(),
                "hostile.onnx: initializer: tensor 'w': dim 1 (6148914691236517206) exceeds the "
                "limit of 1099511627776");
}

TEST_F(ImporterHostile, ConstantAttributesAreCheckedLikeWeights) {
  onnx::ModelProto model = reshapeFromConstant({2});
  onnx::TensorProto* t = model.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t();
  t->set_dims(0, -5);
  expectRefused(model,
                "hostile.onnx: node 'target' (#0, Constant) attribute 'value': tensor '': dim 0 "
                "is negative (-5)");
}

TEST_F(ImporterHostile, IfNested32DeepImportsAndRuns) {
  // Protobuf's default recursion limit made this "protobuf parse failed".
  auto net = importOnnxBytes(serialized(nestedIfModel(32)), ".", "deep.onnx");
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  ReferenceBackend backend(net.value());
  std::vector<NamedTensor> out;
  Tensor cond = Tensor::fromVector<uint8_t>(DataType::kBool, {}, {0});
  ASSERT_TRUE(backend.run({{"cond", cond}}, &out).isOk());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].tensor.data<float>()[0], 32.0f);  // the outermost else branch
}

TEST_F(ImporterHostile, NestingPastTheLimitHasItsOwnMessage) {
  expectRefused(nestedIfModel(70),
                "hostile.onnx: node 'if_70' (#0, If): subgraphs nest 70 levels deep; the limit "
                "is 64");
}

TEST_F(ImporterHostile, StructuresAPlanCannotKeepAreRefused) {
  // Each once built into a plan that `kiln run` then refused.
  expectRefused(outputNeverProducedModel(),
                "hostile.onnx: graph output 'ghost' is never produced (no node, input or "
                "initializer has that name)");
  expectRefused(splitWithoutOutputsModel(),
                "hostile.onnx: node 'split' (#1, Split): names no outputs");
  expectRefused(emptyInputNameModel(), "hostile.onnx: graph input #1 has an empty name");
}

TEST_F(ImporterHostile, OrdinaryModelsStillImport) {
  EXPECT_TRUE(importStatus(identityModel({2, 3})).isOk());
  EXPECT_TRUE(importStatus(identityModel({0, int64_t{1} << 20})).isOk());  // empty, large dim
  // Empty but claiming 2^40 x 2^40 elements by its other dims: refused (tensor_size.h).
  const Status huge = importStatus(identityModel({0, int64_t{1} << 40, int64_t{1} << 40}));
  EXPECT_FALSE(huge.isOk());
  EXPECT_NE(huge.message().find("is empty, but its other dims alone pass the limit"),
            std::string::npos)
      << huge.message();
  EXPECT_TRUE(importStatus(opsetModel(17)).isOk());
}

}  // namespace
}  // namespace kiln
