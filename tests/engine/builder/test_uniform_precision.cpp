// One precision per engine (engine/builder/uniform_precision.cpp): the precision whose float
// layers' best times add up to the least wins, every float layer moves to its best candidate
// in it, and when a build that enabled float16 ends up float32 a warning says so and names
// the layers that decided it, slowest first. Records built in code: no backend runs.
#include <gtest/gtest.h>

#include "builder/build_steps.h"

namespace kiln::test {
namespace {

TacticCandidate candidate(DataType precision, double ms) {
  TacticCandidate c;
  c.tactic = "cuda.test";
  c.precision = precision;
  c.milliseconds = ms;
  return c;
}

LayerRecord layer(const std::string& name, double fp16, double fp32) {
  LayerRecord l;
  l.name = name;
  l.candidates = {candidate(DataType::kFloat16, fp16), candidate(DataType::kFloat32, fp32)};
  return l;
}

struct Unified {
  BuildRecord record;
  std::vector<LayerImplementation> layers;
};

Unified unify(std::vector<LayerRecord> records) {
  BuilderConfig config;
  config.fp16 = true;
  Unified u;
  u.record.layers = std::move(records);
  u.layers.resize(u.record.layers.size());
  std::vector<build::UniformLayer> info(u.record.layers.size());
  for (build::UniformLayer& i : info) i.computesInFloat = true;
  EXPECT_TRUE(build::unifyPrecision(config, info, &u.record, &u.layers).isOk());
  return u;
}

TEST(UniformPrecision, OneSlowHalfLayerKeepsTheEngineFloat32AndIsNamed) {
  // float16 totals 0.1 + 3.2 + 0.3 = 3.6 ms, float32 0.2 + 0.6 + 0.5 = 1.3 ms.
  Unified u =
      unify({layer("gemm", 0.1, 0.2), layer("grouped conv", 3.2, 0.6), layer("norm", 0.3, 0.5)});
  for (const LayerImplementation& l : u.layers) EXPECT_EQ(l.precision, DataType::kFloat32);
  ASSERT_EQ(u.record.warnings.size(), 1u);
  const std::string& w = u.record.warnings[0];
  EXPECT_NE(w.find("float16 was enabled, but the engine runs float32"), std::string::npos) << w;
  EXPECT_NE(w.find("slowest in float16: 'grouped conv' (float16 3.200 ms, float32 0.600 ms)"),
            std::string::npos)
      << w;
  EXPECT_EQ(w.find("'gemm'"), std::string::npos) << w;  // faster in float16: not named
  EXPECT_EQ(w.find("'norm'"), std::string::npos) << w;  // likewise
  EXPECT_NE(u.record.layers[1].precisionReason.find("engine-wide float32"), std::string::npos);
}

TEST(UniformPrecision, FasterHalfEngineWarnsOfNothing) {
  Unified u = unify({layer("gemm", 0.1, 0.2), layer("grouped conv", 0.64, 0.6)});
  for (const LayerImplementation& l : u.layers) EXPECT_EQ(l.precision, DataType::kFloat16);
  EXPECT_TRUE(u.record.warnings.empty());
}

}  // namespace
}  // namespace kiln::test
