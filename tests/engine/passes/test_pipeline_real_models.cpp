// The whole level-1 pipeline on the real models of resources/models: each rewritten
// network runs on the CPU reference and matches the onnxruntime outputs stored
// beside it (test_data_set_0) at the real_models conformance tolerance, and keeps
// its graph outputs. Also checks the passes that must fire on them do.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"
#include "support/op_test.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;

struct ModelCase {
  const char* folder;
  // Pass name -> least number of rewrites it must make on this model.
  std::map<std::string, int> atLeast;
};

// Inputs (by their stored names) and outputs, in file order.
void readTestData(const fs::path& dir, std::map<std::string, Tensor>* inputs,
                  std::vector<Tensor>* outputs) {
  for (int i = 0;; ++i) {
    const fs::path in = dir / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(in)) break;
    std::string name;
    auto t = readTensorProtoFile(in.string(), &name);
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    (*inputs)[name] = t.value();
  }
  for (int i = 0;; ++i) {
    const fs::path out = dir / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(out)) break;
    auto t = readTensorProtoFile(out.string());
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    outputs->push_back(t.value());
  }
}

// `network` on the CPU reference against the stored outputs, at the real_models
// conformance tolerance.
void expectOutputsMatch(const Network& network, const std::map<std::string, Tensor>& inputs,
                        const std::vector<Tensor>& expected) {
  std::vector<NamedTensor> actual;
  Status s = ReferenceBackend(network).run(inputs, &actual);
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE(actual[i].name);
    expectTensorNear(actual[i].tensor, expected[i], 1e-4, 1e-3);
  }
}

class PipelineOnRealModels : public testing::TestWithParam<ModelCase> {};

TEST_P(PipelineOnRealModels, OutputsMatchTheStoredReference) {
  const ModelCase& c = GetParam();
  const fs::path dir = fs::path(KILN_MODELS_DIR) / c.folder;
  auto imported = importOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  Network optimized = imported.value();
  std::vector<PassApplication> applied;
  ASSERT_TRUE(runPasses(optimized, 1, {}, &applied).isOk());
  std::map<std::string, int> counts;
  for (const PassApplication& a : applied) ++counts[a.pass];
  for (const auto& [pass, least] : c.atLeast) EXPECT_GE(counts[pass], least) << pass;
  ASSERT_EQ(optimized.graph.outputs.size(), imported->graph.outputs.size());
  for (size_t i = 0; i < optimized.graph.outputs.size(); ++i)
    EXPECT_EQ(optimized.graph.outputs[i].name, imported->graph.outputs[i].name);

  std::map<std::string, Tensor> inputs;
  std::vector<Tensor> expected;
  readTestData(dir / "test_data_set_0", &inputs, &expected);
  ASSERT_FALSE(expected.empty());
  expectOutputsMatch(optimized, inputs, expected);
}

// `--disable-pass NAME` of any pass still gives the right outputs: the level-2
// pipeline (channels-last too) with each pass off in turn, on every real model.
TEST_P(PipelineOnRealModels, EachPassDisabledInTurnStillMatches) {
  const ModelCase& c = GetParam();
  const fs::path dir = fs::path(KILN_MODELS_DIR) / c.folder;
  auto imported = importOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(imported.isOk()) << imported.status().toString();
  std::map<std::string, Tensor> inputs;
  std::vector<Tensor> expected;
  readTestData(dir / "test_data_set_0", &inputs, &expected);
  for (const PassInfo& pass : listPasses()) {
    SCOPED_TRACE("--disable-pass " + pass.name);
    Network optimized = imported.value();
    std::vector<PassApplication> applied;
    ASSERT_TRUE(runPasses(optimized, 2, {pass.name}, &applied, /*channelsLast=*/true).isOk());
    for (const PassApplication& a : applied) EXPECT_NE(a.pass, pass.name);
    expectOutputsMatch(optimized, inputs, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, PipelineOnRealModels,
    testing::Values(
        ModelCase{"ppocr_mobile_v2_cls", {{"fold_batch_norm", 35}, {"remove_no_op_nodes", 1}}},
        ModelCase{"ppocrv4_det", {{"fuse_conv_bias_activation", 21}}},
        // Opset 12: its five decomposed LayerNorms become ai.kiln LayerNormalization; three
        // pre-norm residuals ride their GEMMs' epilogues, one more Add becomes AddLayerNorm
        // with its norm; seven Muls by 1.
        ModelCase{"ppocrv4_rec",
                  {{"fuse_layer_norm", 5},
                   {"fuse_prenorm_residual", 3},
                   {"fuse_add_layer_norm", 1},
                   {"remove_no_op_nodes", 7}}},
        // Its tanh-form GELU (opset 15: ai.kiln Gelu) and three same-shape Expands.
        ModelCase{"magika_standard_v3_3", {{"fuse_gelu", 1}, {"remove_no_op_nodes", 3}}},
        ModelCase{"silero_vad", {{"remove_no_op_nodes", 2}}}),
    [](const testing::TestParamInfo<ModelCase>& info) { return std::string(info.param.folder); });

}  // namespace
}  // namespace kiln::test
