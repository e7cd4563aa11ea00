// The trtexec command line for the same build, so a user can check Kiln's
// choices against TensorRT's on the same model.
#include <sstream>

#include "kiln/builder.h"

namespace kiln {
namespace {

std::string shapeSpec(const OptimizationProfile& profile, const Shape ShapeRange::*which) {
  std::string out;
  for (const auto& [name, range] : profile.inputs) {
    if (!out.empty()) out += ",";
    out += name + ":" + shapeToString(range.*which);
  }
  return out;
}

std::string trtSources(uint32_t sources) {
  // TensorRT's sources for what Kiln's map onto; Kiln and BLAS have no counterpart.
  std::string out = (sources & kTacticCudnn) ? "+CUDNN" : "-CUDNN";
  out += (sources & kTacticCublasLt) ? ",+CUBLAS_LT" : ",-CUBLAS_LT";
  return out;
}

}  // namespace

std::string trtexecCommandLine(const BuilderConfig& config, const std::string& onnxPath,
                               const std::string& enginePath) {
  std::ostringstream cmd;
  cmd << "trtexec --onnx=" << onnxPath;
  if (!config.tf32) cmd << " --noTF32";
  if (config.fp16) cmd << " --fp16";
  if (config.bf16) cmd << " --bf16";
  if (config.int8) cmd << " --int8";
  // trtexec reads a calibration cache in its own binary-scale format; Kiln's text cache
  // needs converting (docs/quantization.md), but the flag is the same.
  if (config.int8 && !config.calibrationCachePath.empty())
    cmd << " --calib=" << config.calibrationCachePath;
  if (config.fp8) cmd << " --fp8";
  if (config.stronglyTyped) cmd << " --stronglyTyped";
  if (config.precisionConstraints != ConstraintMode::kNone)
    cmd << " --precisionConstraints=" << constraintModeName(config.precisionConstraints);
  if (!config.layerPrecisions.empty())
    cmd << " --layerPrecisions=" << layerPrecisionSpecToString(config.layerPrecisions);
  if (!config.layerOutputTypes.empty())
    cmd << " --layerOutputTypes=" << layerPrecisionSpecToString(config.layerOutputTypes);
  // trtexec makes one profile per --minShapes/--optShapes/--maxShapes triple.
  for (const OptimizationProfile& profile : config.profiles) {
    if (profile.inputs.empty()) continue;
    cmd << " --minShapes=" << shapeSpec(profile, &ShapeRange::min)
        << " --optShapes=" << shapeSpec(profile, &ShapeRange::opt)
        << " --maxShapes=" << shapeSpec(profile, &ShapeRange::max);
  }
  cmd << " --builderOptimizationLevel=" << config.optimizationLevel;
  cmd << " --memPoolSize=workspace:" << (config.workspaceLimitBytes >> 20) << "M";
  if (config.tacticSources != kAllTacticSources)
    cmd << " --tacticSources=" << trtSources(config.tacticSources);
  cmd << " --profilingVerbosity=" << profilingVerbosityName(config.profilingVerbosity);
  cmd << " --saveEngine=" << enginePath;
  return cmd.str();
}

std::string tensorRt11CommandLines(const BuilderConfig& config, const std::string& onnxPath,
                                   const std::string& planPath) {
  BuilderConfig typed = config;
  typed.fp16 = typed.bf16 = typed.int8 = false;  // in the exported model's types now
  typed.calibrationCachePath.clear();
  typed.precisionConstraints = ConstraintMode::kNone;
  typed.layerPrecisions.clear();
  typed.layerOutputTypes.clear();
  typed.stronglyTyped = true;
  if (config.stronglyTyped) return trtexecCommandLine(typed, onnxPath, planPath);
  std::string stem = onnxPath;
  const std::string suffix = ".onnx";
  if (stem.size() > suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0)
    stem.resize(stem.size() - suffix.size());
  const std::string exported = stem + ".strongly_typed.onnx";
  return "kiln export-onnx " + onnxPath + " -o " + exported + " --from " + planPath + " && " +
         trtexecCommandLine(typed, exported, planPath);
}

}  // namespace kiln
