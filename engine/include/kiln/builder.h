// The builder: turns a Network into a Plan under a BuilderConfig, deciding per
// layer the precision (flags, constraints, timing) and the tactic (timed on the
// backend at the first profile's opt shapes, cached, or replayed), and recording
// every decision in the plan's BuildRecord.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/build_backend.h"
#include "kiln/builder_config.h"
#include "kiln/plan.h"
#include "kiln/status.h"

namespace kiln {

// Per layer, the tactic and precision a build chose: what --save-tactics writes and
// --load-tactics pins.
struct TacticChoice {
  std::string tactic;
  DataType precision = DataType::kFloat32;
};
struct TacticReplay {
  std::map<std::string, TacticChoice> layers;  // by layer name

  static TacticReplay fromRecord(const BuildRecord& record);
  static Result<TacticReplay> load(const std::string& path);
  Status save(const std::string& path) const;
};

// Builds `network` for `backend`. Fails with the layer's name when an obeyed
// constraint cannot hold, when no tactic of a layer can run, or when the network
// does not run at a profile's shapes; kCancelled when the callbacks' cancel flag
// is raised. Warnings (prefer fallbacks, unreplayed layers) go to the callback and
// the record.
Result<Plan> buildPlan(std::shared_ptr<const Network> network, const BuilderConfig& config,
                       BuildBackend& backend);

// The trtexec command line that asks TensorRT for the same build ("trtexec
// --onnx=model.onnx --fp16 --layerPrecisions=... --saveEngine=model.plan").
std::string trtexecCommandLine(const BuilderConfig& config, const std::string& onnxPath,
                               const std::string& enginePath);

// TensorRT 11 has no precision flags: the same build there is the model exported
// strongly typed from the plan, then built with --stronglyTyped. Returns the two
// commands joined by " && " ("kiln export-onnx m.onnx -o m.strongly_typed.onnx --from
// m.kiln && trtexec --onnx=m.strongly_typed.onnx --stronglyTyped ..."); for a build
// that already was strongly typed, only the trtexec line.
std::string tensorRt11CommandLines(const BuilderConfig& config, const std::string& onnxPath,
                                   const std::string& planPath);

// The `kiln build` command line for the same build, as app/cli/build_options.cpp
// parses it ("kiln build model.onnx -o model.kiln --backend cpu --fp16 ..."): every
// setting that differs from the CLI's default, one --min/--opt/--max-shapes triple
// per non-empty profile, arguments quoted for a POSIX shell. `timingCachePath` (the
// config holds only the loaded cache) adds --timing-cache when not empty.
std::string kilnBuildCommandLine(const BuilderConfig& config, const std::string& onnxPath,
                                 const std::string& planPath, const std::string& backend,
                                 const std::string& timingCachePath = "");

}  // namespace kiln
