// Parsing and naming for BuilderConfig's enums and specs (trtexec spellings).
#include <algorithm>
#include <cctype>

#include "kiln/builder_config.h"

namespace kiln {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

bool parsePrecisionName(const std::string& text, DataType* out) {
  const std::string t = lower(text);
  if (t == "fp8") {
    *out = DataType::kFp8E4M3;
    return true;
  }
  if (!parseDataType(t, out)) return false;
  return *out == DataType::kFloat32 || *out == DataType::kFloat16 || *out == DataType::kBFloat16 ||
         *out == DataType::kInt8 || *out == DataType::kFp8E4M3;
}

}  // namespace

std::string precisionSpelling(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "fp32";
    case DataType::kFloat16:
      return "fp16";
    case DataType::kBFloat16:
      return "bf16";
    case DataType::kInt8:
      return "int8";
    case DataType::kFp8E4M3:
      return "fp8";
    default:
      return dataTypeName(type);
  }
}

const char* constraintModeName(ConstraintMode mode) {
  switch (mode) {
    case ConstraintMode::kNone:
      return "none";
    case ConstraintMode::kPrefer:
      return "prefer";
    case ConstraintMode::kObey:
      return "obey";
  }
  return "none";
}

bool parseConstraintMode(const std::string& text, ConstraintMode* out) {
  const std::string t = lower(text);
  if (t == "none")
    *out = ConstraintMode::kNone;
  else if (t == "prefer")
    *out = ConstraintMode::kPrefer;
  else if (t == "obey")
    *out = ConstraintMode::kObey;
  else
    return false;
  return true;
}

Result<std::vector<LayerPrecisionRule>> parseLayerPrecisionSpec(const std::string& spec) {
  std::vector<LayerPrecisionRule> rules;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = trim(spec.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) continue;
    // Layer names may contain ':' themselves; the precision is after the last one.
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return invalidArgument("layer precision spec item '" + item +
                             "' is not NAME:PRECISION (e.g. '*:fp16' or 'Conv_3:fp32')");
    }
    LayerPrecisionRule rule;
    rule.pattern = trim(item.substr(0, colon));
    if (!parsePrecisionName(trim(item.substr(colon + 1)), &rule.precision)) {
      return invalidArgument("layer precision spec item '" + item +
                             "': unknown precision (fp32, fp16, bf16, int8, fp8)");
    }
    rules.push_back(rule);
  }
  return rules;
}

std::string layerPrecisionSpecToString(const std::vector<LayerPrecisionRule>& rules) {
  std::string out;
  for (const LayerPrecisionRule& rule : rules) {
    if (!out.empty()) out += ",";
    out += rule.pattern + ":" + precisionSpelling(rule.precision);
  }
  return out;
}

const LayerPrecisionRule* findLayerRule(const std::vector<LayerPrecisionRule>& rules,
                                        const std::string& layerName) {
  const LayerPrecisionRule* wildcard = nullptr;
  const LayerPrecisionRule* exact = nullptr;
  for (const LayerPrecisionRule& rule : rules) {
    if (rule.pattern == layerName)
      exact = &rule;
    else if (rule.pattern == "*")
      wildcard = &rule;
  }
  return exact ? exact : wildcard;
}

const LayerPrecisionRule* findLayerRule(const std::vector<LayerPrecisionRule>& rules,
                                        const std::vector<std::string>& layerNames) {
  const LayerPrecisionRule* found = nullptr;
  for (const std::string& name : layerNames) {
    const LayerPrecisionRule* rule = findLayerRule(rules, name);
    if (rule && (!found || found->pattern == "*")) found = rule;
  }
  return found;
}

const char* tacticSourceName(uint32_t source) {
  switch (source) {
    case kTacticCudnn:
      return "cudnn";
    case kTacticCublasLt:
      return "cublaslt";
    case kTacticKiln:
      return "kiln";
    case kTacticBlas:
      return "blas";
    default:
      return "unknown";
  }
}

Result<uint32_t> parseTacticSources(const std::string& spec, uint32_t base) {
  uint32_t sources = base;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string item = lower(trim(spec.substr(start, comma - start)));
    start = comma + 1;
    if (item.empty()) continue;
    bool enable = true;
    if (item[0] == '+' || item[0] == '-') {
      enable = item[0] == '+';
      item = item.substr(1);
    }
    uint32_t bit = 0;
    if (item == "cudnn")
      bit = kTacticCudnn;
    else if (item == "cublaslt" || item == "cublas_lt" || item == "cublas")
      bit = kTacticCublasLt;
    else if (item == "kiln")
      bit = kTacticKiln;
    else if (item == "blas")
      bit = kTacticBlas;
    else
      return invalidArgument("unknown tactic source '" + item +
                             "' (cudnn, cublaslt, kiln, blas, each with + or -)");
    sources = enable ? (sources | bit) : (sources & ~bit);
  }
  return sources;
}

std::string tacticSourcesToString(uint32_t sources) {
  std::string out;
  for (uint32_t bit : {kTacticCudnn, kTacticCublasLt, kTacticKiln, kTacticBlas}) {
    if (!out.empty()) out += ",";
    out += std::string(sources & bit ? "+" : "-") + tacticSourceName(bit);
  }
  return out;
}

const char* profilingVerbosityName(ProfilingVerbosity verbosity) {
  switch (verbosity) {
    case ProfilingVerbosity::kNone:
      return "none";
    case ProfilingVerbosity::kLayerNamesOnly:
      return "layer_names_only";
    case ProfilingVerbosity::kDetailed:
      return "detailed";
  }
  return "none";
}

bool parseProfilingVerbosity(const std::string& text, ProfilingVerbosity* out) {
  const std::string t = lower(text);
  if (t == "none")
    *out = ProfilingVerbosity::kNone;
  else if (t == "layer_names_only" || t == "default")
    *out = ProfilingVerbosity::kLayerNamesOnly;
  else if (t == "detailed")
    *out = ProfilingVerbosity::kDetailed;
  else
    return false;
  return true;
}

Status checkShapeInProfile(const OptimizationProfile& profile, int profileIndex,
                           const std::string& input, const Shape& shape) {
  auto it = profile.inputs.find(input);
  if (it == profile.inputs.end()) return Status::ok();
  const ShapeRange& range = it->second;
  bool inside = shape.size() == range.min.size() && shape.size() == range.max.size();
  for (size_t d = 0; inside && d < shape.size(); ++d) {
    inside = shape[d] >= range.min[d] && shape[d] <= range.max[d];
  }
  if (inside) return Status::ok();
  return Status(StatusCode::kOutOfRange,
                "input '" + input + "' shape " + shapeToString(shape) +
                    " is outside optimization profile " + std::to_string(profileIndex) + ": min " +
                    shapeToString(range.min) + ", max " + shapeToString(range.max));
}

int tacticTimingIterations(int optimizationLevel) {
  static const int kIterations[] = {0, 1, 3, 5, 10, 20};
  return kIterations[std::clamp(optimizationLevel, 0, 5)];
}

}  // namespace kiln
