// What the studio can open and how: file kind detection by content (not only the
// suffix), and loaders that run on a worker thread and return immutable results or
// a one-line error naming the file. No widgets.
#pragma once

#include <QString>
#include <memory>
#include <vector>

#include "engine_report.h"
#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/plan_signature.h"
#include "kiln/status.h"

namespace kiln::studio {

enum class FileKind { kOnnx, kPlan, kTrtexecGraph, kTrtexecProfile, kUnknown };

// .kiln by its magic; trtexec exports by their JSON shape (an object with "Layers",
// or an array whose first element has "count"); anything else ending in .onnx is
// treated as ONNX (the importer then says what is wrong with it).
FileKind detectFileKind(const QString& path);
// "x.graph.json" -> "x.profile.json" when that file exists; else empty.
QString findTrtexecProfile(const QString& graphPath);

struct LoadedModel {
  std::shared_ptr<const Network> network;
  // Unsupported nodes and unresolved shapes: messages with the node as fields
  // (issueNodeName), though the load went on.
  std::vector<Status> warnings;
};
// Imports without refusing unsupported ops (they become warnings), then infers
// shapes so the graph can show them; inferred shapes fill missing value infos.
Result<LoadedModel> loadModel(const std::string& path);

struct LoadedEngine {
  std::shared_ptr<const Plan> plan;  // null for trtexec exports
  std::shared_ptr<const inspector::EngineReport> report;
  // The path of the ONNX model the plan records it was built from ("" if none). It
  // comes from the plan, so it is untrusted: loadPlan never opens or even checks it
  // (a FIFO would hang, /dev/zero exhaust memory, and a plan could probe the user's
  // files); the studio shows it and asks before opening it.
  std::string sourceModelPath;
  // How the plan stood with the signature policy when it loaded (kiln/plan_signature.h).
  PlanTrust trust;
};
// Loads and checks the plan and makes its report; the recorded source model is
// left alone (see LoadedEngine::sourceModelPath).
Result<LoadedEngine> loadPlan(const std::string& path);
Result<LoadedEngine> loadTrtexec(const std::string& graphPath, const std::string& profilePath);

}  // namespace kiln::studio
