#include "file_loader.h"

#include <QFile>
#include <QFileInfo>
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/reference_backend.h"
#include "kiln/shape_inference.h"

namespace kiln::studio {

FileKind detectFileKind(const QString& path) {
  // The head of a regular file only: QFile would block on a FIFO (on the GUI thread).
  const std::string file = path.toStdString();
  Result<int64_t> size = regularFileSize(file);
  if (!size.isOk()) return FileKind::kUnknown;
  Result<std::string> bytes = readRegularFileRange(file, 0, std::min<int64_t>(size.value(), 4096));
  if (!bytes.isOk()) return FileKind::kUnknown;
  const QByteArray head = QByteArray::fromStdString(bytes.value());
  if (head.startsWith(QByteArray(kPlanMagic, sizeof(kPlanMagic)))) return FileKind::kPlan;
  const QByteArray trimmed = head.trimmed();
  if (trimmed.startsWith('{') && head.contains("\"Layers\"")) return FileKind::kTrtexecGraph;
  if (trimmed.startsWith('[') && head.contains("\"count\"")) return FileKind::kTrtexecProfile;
  if (path.endsWith(".onnx", Qt::CaseInsensitive)) return FileKind::kOnnx;
  // No suffix to go by: ONNX is a protobuf, whose first byte is a field tag (ir_version = 0x08).
  if (!head.isEmpty() && head[0] == '\x08') return FileKind::kOnnx;
  return FileKind::kUnknown;
}

QString findTrtexecProfile(const QString& graphPath) {
  QString candidate = graphPath;
  if (!candidate.endsWith(".graph.json")) return {};
  candidate.replace(candidate.size() - QString(".graph.json").size(), QString(".graph.json").size(),
                    ".profile.json");
  return QFileInfo::exists(candidate) ? candidate : QString();
}

Result<LoadedModel> loadModel(const std::string& path) {
  ImportOptions options;
  options.checkSupport = false;  // show the graph; unsupported nodes become warnings
  auto imported = importOnnxFile(path, options);
  if (!imported.isOk()) return imported.status();
  auto network = std::make_shared<Network>(std::move(imported.value()));
  LoadedModel loaded;
  for (const Status& unsupported : findUnsupportedNodeStatuses(*network))
    loaded.warnings.push_back(unsupported.withContext("unsupported"));
  auto inferred = inferShapes(*network);
  if (inferred.isOk()) {
    // Every inferred value (type-only ones too) goes into the value infos, so the
    // views read shapes from the network instead of inferring them again.
    for (const auto& [name, value] : inferred->values) {
      auto declared = network->graph.valueInfo.find(name);
      if (network->graph.initializers.count(name) ||
          (declared != network->graph.valueInfo.end() && declared->second.hasShape))
        continue;
      network->graph.valueInfo[name] = ValueInfo{name, value.type, value.hasShape, value.shape};
    }
    for (size_t i = 0; i < inferred->unresolved.size(); ++i) {
      Status warning(StatusCode::kUnsupported, "shape not inferred: " + inferred->unresolved[i]);
      if (i < inferred->unresolvedNodes.size())
        warning = warning.withNode(inferred->unresolvedNodes[i]);
      loaded.warnings.push_back(warning);
    }
  } else {
    loaded.warnings.push_back(inferred.status().withContext("shape inference"));
  }
  loaded.network = std::move(network);
  return loaded;
}

Result<LoadedEngine> loadPlan(const std::string& path) {
  LoadedEngine loaded;
  auto plan = loadPlanFile(path, &loaded.trust);
  if (!plan.isOk()) return plan.status();
  auto shared = std::make_shared<const Plan>(std::move(plan.value()));
  loaded.report = std::make_shared<const inspector::EngineReport>(inspector::reportFromPlan(
      *shared, QFileInfo(QString::fromStdString(path)).fileName().toStdString()));
  loaded.plan = std::move(shared);
  loaded.sourceModelPath = loaded.plan->record.modelName;
  return loaded;
}

Result<LoadedEngine> loadTrtexec(const std::string& graphPath, const std::string& profilePath) {
  auto report = inspector::reportFromTrtexec(graphPath, profilePath);
  if (!report.isOk()) return report.status();
  LoadedEngine loaded;
  loaded.report = std::make_shared<const inspector::EngineReport>(std::move(report.value()));
  return loaded;
}

}  // namespace kiln::studio
