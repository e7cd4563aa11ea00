// The advisor's rules (inspector/advisor.h) on a real TensorRT engine (the QAT MobileNet V2
// trtexec export with its profile) and on reports planted with each rule's problem.
#include <gtest/gtest.h>

#include <algorithm>

#include "advisor.h"

namespace kiln::inspector {
namespace {

const std::string kDir = std::string(KILN_TEST_DATA_DIR) + "/trtexec/";

const Finding* findRule(const std::vector<Finding>& findings, const std::string& rule,
                        AdviceSeverity severity) {
  for (const Finding& f : findings)
    if (f.rule == rule && f.severity == severity) return &f;
  return nullptr;
}

TEST(Advisor, QatMobileNetEngineFindings) {
  auto report = reportFromTrtexec(kDir + "mobilenet.qat.onnx.engine.graph.json",
                                  kDir + "mobilenet.qat.onnx.engine.profile.json");
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  const std::vector<Finding> findings = adviseEngine(*report);
  const Finding* wide = findRule(findings, "int8-conv-wide-output", AdviceSeverity::kWarning);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->layers.size(), 17u);
  EXPECT_EQ(wide->layers[0], "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94");
  EXPECT_GT(wide->costMs, 0);
  const Finding* types = findRule(findings, "reformat-changes-type", AdviceSeverity::kWarning);
  ASSERT_NE(types, nullptr);
  EXPECT_NE(types->message.find("13 FP16 -> INT8, 4 FP32 -> INT8"), std::string::npos)
      << types->message;
  const Finding* aligned = findRule(findings, "channel-alignment", AdviceSeverity::kWarning);
  // INT8 wants multiples of 16: MobileNet V2's 24-channel stage (the two projections
  // writing it and the two expansions reading it) and the classifier's 1000 outputs.
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(aligned->layers.size(), 5u);
  EXPECT_EQ(aligned->layers[0], "features.2.conv.2.weight + QuantizeLinear_90 + Conv_94");
  const Finding* stem = findRule(findings, "channel-alignment", AdviceSeverity::kInfo);
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->layers.size(), 1u);
  // Ordered by cost, largest first; every timed finding's cost is its layers' sum.
  for (size_t i = 1; i < findings.size(); ++i)
    if (findings[i].costMs >= 0) EXPECT_LE(findings[i].costMs, findings[i - 1].costMs);
  const nlohmann::json doc = adviceJson(findings);
  EXPECT_EQ(doc["findings"].size(), findings.size());
  EXPECT_EQ(doc["findings"][0]["rule"], findings[0].rule);
  EXPECT_NE(formatAdvice(findings).find("fix: "), std::string::npos);
}

ReportTensor tensor(const std::string& name, std::vector<int64_t> dims, const std::string& fmt) {
  ReportTensor t;
  t.name = name;
  t.dimensions = std::move(dims);
  t.formatDatatype = fmt;
  return t;
}

ReportLayer layer(const std::string& name, const std::string& type, const std::string& precision,
                  ReportTensor in, ReportTensor out) {
  ReportLayer l;
  l.name = name;
  l.layerType = type;
  l.precision = precision;
  l.inputs = {std::move(in)};
  l.outputs = {std::move(out)};
  l.outputBytes = 1024;
  return l;
}

// Each rule's problem planted once: a 3-channel FP16 stem, an FP16 convolution with 12 -> 20
// channels, a Transpose that changes FP32 to FP16, an FP32 island in an FP16 engine.
TEST(Advisor, PlantedProblemsEachFindTheirRule) {
  EngineReport r;
  r.layers.push_back(layer("stem", "Convolution", "FP16",
                           tensor("x", {1, 3, 32, 32}, "Row major linear FP16"),
                           tensor("s", {1, 16, 16, 16}, "Row major linear FP16")));
  r.layers.push_back(layer("odd", "Convolution", "FP16",
                           tensor("s", {1, 12, 16, 16}, "Row major linear FP16"),
                           tensor("o", {1, 20, 16, 16}, "Row major linear FP16")));
  r.layers.push_back(layer("to_half", "Transpose", "FP16",
                           tensor("o", {1, 20, 16, 16}, "Row major linear FP32"),
                           tensor("t", {1, 16, 16, 20}, "Row major linear FP16")));
  r.layers.push_back(layer("island", "MatrixMultiply", "FP32",
                           tensor("t", {1, 16, 16, 20}, "Row major linear FP32"),
                           tensor("y", {1, 16, 16, 8}, "Row major linear FP32")));
  const std::vector<Finding> findings = adviseEngine(r);
  const Finding* odd = findRule(findings, "channel-alignment", AdviceSeverity::kWarning);
  ASSERT_NE(odd, nullptr);
  EXPECT_EQ(odd->layers, std::vector<std::string>{"odd"});
  EXPECT_EQ(odd->costMs, -1);  // untimed report: no cost
  const Finding* stem = findRule(findings, "channel-alignment", AdviceSeverity::kInfo);
  ASSERT_NE(stem, nullptr);
  EXPECT_EQ(stem->layers, std::vector<std::string>{"stem"});
  const Finding* types = findRule(findings, "reformat-changes-type", AdviceSeverity::kWarning);
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->layers, std::vector<std::string>{"to_half"});
  EXPECT_NE(findRule(findings, "layout-copies", AdviceSeverity::kInfo), nullptr);
  const Finding* island = findRule(findings, "fp32-layers", AdviceSeverity::kInfo);
  ASSERT_NE(island, nullptr);
  EXPECT_EQ(island->layers, std::vector<std::string>{"island"});
  EXPECT_EQ(findRule(findings, "int8-conv-wide-output", AdviceSeverity::kWarning), nullptr);
}

TEST(Advisor, AnFp32EngineWithAlignedLayersHasNothingToSay) {
  EngineReport r;
  r.layers.push_back(layer("conv", "Convolution", "FP32",
                           tensor("x", {1, 3, 32, 32}, "Row major linear FP32"),
                           tensor("y", {1, 16, 32, 32}, "Row major linear FP32")));
  EXPECT_TRUE(adviseEngine(r).empty());
  EXPECT_EQ(formatAdvice({}), "no findings\n");
}

}  // namespace
}  // namespace kiln::inspector
