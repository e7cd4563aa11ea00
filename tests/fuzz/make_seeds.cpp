// kiln_fuzz_seeds OUTDIR MODEL.onnx...: writes the seed files only the engine can
// make, through its public API: per model a CPU plan (plan-STEM.kiln, symbolic dims
// ranging 1..4) and the tactics file of its build (tactics-STEM.json); one timing
// cache of all the builds, a constraints file and a calibration cache. make_corpus.sh
// sorts them into the fuzz targets' corpora. Exit status 1 when a build fails.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "kiln/build_backend.h"
#include "kiln/builder.h"
#include "kiln/calibration.h"
#include "kiln/constraints_file.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "kiln/timing_cache.h"

namespace {

// min / opt / max shapes of every dynamic input: symbolic dims as 1 / 2 / 4.
kiln::OptimizationProfile smallProfile(const kiln::Network& network) {
  kiln::OptimizationProfile profile;
  for (const kiln::ValueInfo& input : network.graph.inputs) {
    bool dynamic = false;
    kiln::ShapeRange range;
    for (const kiln::DimExpr& dim : input.shape) {
      dynamic |= !dim.isConst();
      range.min.push_back(dim.isConst() ? dim.constValue() : 1);
      range.opt.push_back(dim.isConst() ? dim.constValue() : 2);
      range.max.push_back(dim.isConst() ? dim.constValue() : 4);
    }
    if (dynamic) profile.inputs[input.name] = range;
  }
  return profile;
}

kiln::Status writePlanSeeds(const std::string& model, const std::filesystem::path& out,
                            kiln::TimingCache* cache) {
  KILN_ASSIGN_OR_RETURN(kiln::Network network, kiln::importOnnxFile(model));
  kiln::BuilderConfig config;
  config.profiles.push_back(smallProfile(network));
  config.timingCache = cache;
  auto backend = kiln::cpuBuildBackend();
  KILN_ASSIGN_OR_RETURN(
      kiln::Plan plan,
      kiln::buildPlan(std::make_shared<kiln::Network>(std::move(network)), config, *backend));
  const std::string stem = std::filesystem::path(model).stem().string();
  KILN_RETURN_IF_ERROR(kiln::savePlan(plan, (out / ("plan-" + stem + ".kiln")).string()));
  return kiln::TacticReplay::fromRecord(plan.record)
      .save((out / ("tactics-" + stem + ".json")).string());
}

kiln::Status writeTextSeeds(const std::filesystem::path& out) {
  kiln::PrecisionConstraints constraints;
  constraints.mode = kiln::ConstraintMode::kPrefer;
  constraints.layerPrecisions = {{"*", kiln::DataType::kFloat16},
                                 {"add0", kiln::DataType::kFloat32}};
  constraints.layerOutputTypes = {{"add0", kiln::DataType::kFloat32}};
  constraints.note = "kiln_fuzz_seeds";
  KILN_RETURN_IF_ERROR(
      kiln::savePrecisionConstraints(constraints, (out / "constraints.json").string()));
  kiln::CalibrationTable table;
  table.method = "entropy";
  table.samples = 4;
  table.tensors["x"].amax = 1.5;
  table.tensors["y"].amax = 0.03125;
  table.tensors["w"].pinned = kiln::DataType::kFloat16;
  return kiln::saveCalibrationCache(table, (out / "calibration.cache").string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln_fuzz_seeds OUTDIR MODEL.onnx...\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  kiln::TimingCache cache;
  int failures = 0;
  for (int i = 2; i < argc; ++i) {
    if (kiln::Status s = writePlanSeeds(argv[i], out, &cache); !s.isOk()) {
      std::fprintf(stderr, "kiln_fuzz_seeds: %s: %s\n", argv[i], s.message().c_str());
      ++failures;
    }
  }
  kiln::Status s = cache.save((out / "timing_cache.json").string());
  if (s.isOk()) s = writeTextSeeds(out);
  if (!s.isOk()) {
    std::fprintf(stderr, "kiln_fuzz_seeds: %s\n", s.message().c_str());
    return 1;
  }
  return failures ? 1 : 0;
}
