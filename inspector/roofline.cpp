#include "roofline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "flops.h"
#include "measured_peaks.h"

namespace kiln::inspector {
namespace {
using nlohmann::json;

using Dims = std::vector<int64_t>;

// Vendor datasheet numbers, dense (the "with sparsity" figures halved), FP32 on CUDA
// cores, FP16/BF16 and INT8/FP8 on tensor cores:
//   H100 SXM5, H100 PCIe: NVIDIA H100 Tensor Core GPU datasheet (FP32 67 / 51 TFLOPS,
//     FP16 989.4 / 756.5 TFLOPS, INT8 1979 / 1513 TOPS, HBM3 3.35 / 2.0 TB/s)
//   H200 SXM: NVIDIA H200 datasheet (compute as H100 SXM, HBM3e 4.8 TB/s)
//   A100 SXM4: NVIDIA A100 datasheet (FP32 19.5, FP16 312, INT8 624; 80GB 2039 GB/s,
//     40GB 1555 GB/s)
//   L4: NVIDIA L4 datasheet (FP32 30.3, FP16 121, INT8/FP8 242.5 [485 sparse], 300 GB/s)
//   RTX 4090: NVIDIA Ada GPU architecture whitepaper, appendix (FP32 82.6, FP16 tensor
//     with FP32 accumulate 165.2 [Kiln's kernels accumulate in FP32], INT8 660.6,
//     1008 GB/s)
// Order matters: the first entry whose every key appears in the device name wins, so
// "H100 PCIe" precedes the plain "H100".
struct PeakEntry {
  std::vector<const char*> keys;  // lower case
  DevicePeaks peaks;
};

const std::vector<PeakEntry>& peakEntries() {
  constexpr double T = 1e12;
  static const std::vector<PeakEntry> kEntries = {
      {{"h200"}, {"H200", 67 * T, 989.4 * T, 1979 * T, 4.8 * T}},
      {{"h100", "pcie"}, {"H100 PCIe", 51.2 * T, 756.5 * T, 1513 * T, 2.0 * T}},
      {{"h100"}, {"H100 SXM", 67 * T, 989.4 * T, 1979 * T, 3.35 * T}},
      {{"a100", "40gb"}, {"A100 40GB", 19.5 * T, 312 * T, 624 * T, 1.555 * T}},
      {{"a100"}, {"A100 80GB", 19.5 * T, 312 * T, 624 * T, 2.039 * T}},
      {{"l4"}, {"L4", 30.3 * T, 121 * T, 242.5 * T, 0.3 * T}},
      {{"4090"}, {"RTX 4090", 82.6 * T, 165.2 * T, 660.6 * T, 1.008 * T}},
  };
  return kEntries;
}

// "l4" must be a word of the name ("NVIDIA L4"), not part of "L40S".
bool namesKey(const std::string& name, const std::string& key) {
  for (size_t at = name.find(key); at != std::string::npos; at = name.find(key, at + 1)) {
    const bool startOk = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
    const size_t end = at + key.size();
    const bool endOk = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
    if (startOk && (endOk || key.size() > 2)) return true;
  }
  return false;
}

double product(const Dims& d, size_t from = 0) {
  double n = 1;
  for (size_t i = from; i < d.size(); ++i) n *= static_cast<double>(d[i]);
  return n;
}

bool concrete(const Dims& d) {
  return std::all_of(d.begin(), d.end(), [](int64_t v) { return v >= 0; });
}

// ---- Kiln network nodes -------------------------------------------------------------

std::optional<Dims> shapeOf(const ShapeInferenceResult& shapes, const std::string& name) {
  auto it = shapes.values.find(name);
  if (name.empty() || it == shapes.values.end() || !it->second.hasShape) return std::nullopt;
  Dims out;
  for (const DimExpr& d : it->second.shape) {
    if (!d.isConst()) return std::nullopt;
    out.push_back(d.constValue());
  }
  return out;
}

bool hasInput(const Node& node, size_t i) {
  return node.inputs.size() > i && !node.inputs[i].empty();
}

// One FLOP per output element for each fused bias (input 2), residual (input 3, convs)
// and activation.
double epilogueOps(const Node& node, bool residual) {
  double ops = hasInput(node, 2) ? 1 : 0;
  if (residual && hasInput(node, 3)) ops += 1;
  const std::string act = node.attrString("activation", "none");
  if (!act.empty() && act != "none") ops += 1;
  return ops;
}

std::optional<double> convFlops(const Node& node, const ShapeInferenceResult& shapes) {
  auto w = shapeOf(shapes, node.inputs.size() > 1 ? node.inputs[1] : "");
  auto y = shapeOf(shapes, node.outputs[0]);
  if (!w || !y || w->size() < 3) return std::nullopt;
  // w = [K, C/g, k...] (or KRSC channels-last: the same product of all but K).
  const double out = product(*y);
  return 2.0 * out * product(*w, 1) + out * epilogueOps(node, true);
}

// FusedConvMaxPool: the conv's output is not a tensor of the graph; its size follows
// from X, W and the conv attributes (ir/conv_max_pool.h).
std::optional<double> convMaxPoolFlops(const Node& node, const ShapeInferenceResult& shapes) {
  auto x = shapeOf(shapes, node.inputs[0]);
  auto w = shapeOf(shapes, node.inputs.size() > 1 ? node.inputs[1] : "");
  auto y = shapeOf(shapes, node.outputs[0]);
  if (!x || !w || !y || x->size() != 4 || w->size() != 4) return std::nullopt;
  const Dims strides = node.attrInts("strides", {1, 1}), dil = node.attrInts("dilations", {1, 1});
  const Dims pads = node.attrInts("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4) return std::nullopt;
  double convOut = static_cast<double>((*x)[0] * (*w)[0]);
  for (size_t d = 0; d < 2; ++d) {
    const double extent = static_cast<double>((*x)[2 + d]) + static_cast<double>(pads[d]) +
                          static_cast<double>(pads[2 + d]) -
                          static_cast<double>(dil[d]) * static_cast<double>((*w)[2 + d] - 1) - 1;
    if (strides[d] <= 0 || extent < 0) return std::nullopt;
    convOut *= std::floor(extent / static_cast<double>(strides[d])) + 1;
  }
  const double pool = product(*y) * product(node.attrInts("pool_kernel_shape", {1, 1}));
  return 2.0 * convOut * product(*w, 1) + convOut * epilogueOps(node, false) + pool;
}

std::optional<double> matmulFlops(const Node& node, const ShapeInferenceResult& shapes) {
  auto a = shapeOf(shapes, node.inputs[0]);
  auto y = shapeOf(shapes, node.outputs[0]);
  if (!a || !y || a->empty()) return std::nullopt;
  const double out = product(*y);
  return 2.0 * out * static_cast<double>(a->back()) + out * epilogueOps(node, false);
}

// Q K^T and P V: 2 B H Sq Sk D + 2 B H Sq Sk Dv (ir/fused_attention.h's layouts).
std::optional<double> attentionFlops(const Node& node, const ShapeInferenceResult& shapes) {
  double b, h, sq, sk, d, dv;
  if (node.attrString("qkv_layout", "BSHD") == "STRIDED") {
    const Dims q = node.attrInts("q_view"), k = node.attrInts("k_view"),
               v = node.attrInts("v_view");
    if (q.size() < 5 || k.size() < 5 || v.size() < 5) return std::nullopt;
    b = q[1], h = q[2], sq = q[3], d = q[4], sk = k[3], dv = v[4];
  } else {
    auto q = shapeOf(shapes, node.inputs[0]);
    auto k = shapeOf(shapes, node.inputs.size() > 1 ? node.inputs[1] : "");
    auto v = shapeOf(shapes, node.inputs.size() > 2 ? node.inputs[2] : "");
    if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4) return std::nullopt;
    const bool bshd = node.attrString("qkv_layout", "BSHD") == "BSHD";
    const size_t seqAxis = bshd ? 1 : 2, headAxis = bshd ? 2 : 1;
    b = (*q)[0], h = (*q)[headAxis], sq = (*q)[seqAxis], d = (*q)[3];
    sk = (*k)[seqAxis], dv = (*v)[3];
  }
  return 2.0 * b * h * sq * sk * (d + dv);
}

std::optional<double> elementsOf(const ShapeInferenceResult& shapes, const std::string& name) {
  auto d = shapeOf(shapes, name);
  return d ? std::optional<double>(product(*d)) : std::nullopt;
}

// ---- trtexec layers ----------------------------------------------------------------

std::optional<json> parameterJson(const ReportLayer& l, const std::string& key) {
  auto it = l.parameters.find(key);
  if (it == l.parameters.end()) return std::nullopt;
  json value = json::parse(it->second, nullptr, false);
  if (value.is_discarded()) return json(it->second);  // a plain string ("kNONE")
  return value;
}

double parameterNumber(const ReportLayer& l, const std::string& key, double fallback) {
  auto v = parameterJson(l, key);
  return v && v->is_number() ? v->get<double>() : fallback;
}

Dims parameterDims(const ReportLayer& l, const std::string& key) {
  Dims out;
  auto v = parameterJson(l, key);
  if (v && v->is_array())
    for (const json& d : *v)
      if (d.is_number_integer()) out.push_back(d.get<int64_t>());
  return out;
}

std::string typeOf(const ReportLayer& l) {
  auto it = l.parameters.find("ParameterType");
  return it != l.parameters.end() && !it->second.empty() ? it->second : l.layerType;
}

bool contains(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

bool movesDataOnly(const std::string& type) {
  static const std::set<std::string> kTypes = {
      "Reformat", "Shuffle",  "NoOp",     "Copy",      "Transpose",     "Slice",
      "Gather",   "Identity", "Padding",  "Shape",     "Concatenation", "Constant",
      "Cast",     "Fill",     "Quantize", "Dequantize"};
  return kTypes.count(type) || contains(type, "Copy") || contains(type, "Reformat");
}

std::optional<double> trtexecConvFlops(const ReportLayer& l, const Dims& in, const Dims& out,
                                       bool deconvolution) {
  const double groups = parameterNumber(l, "Groups", 1);
  Dims kernel = parameterDims(l, "Kernel");
  double perPoint = 0;  // (C/g) x kernel for a convolution, (K/g) x kernel for a deconvolution
  if (!kernel.empty() && in.size() >= 2) {
    const double channels =
        deconvolution ? parameterNumber(l, "OutMaps", -1) : static_cast<double>(in[1]);
    if (channels <= 0 || groups <= 0) return std::nullopt;
    perPoint = channels / groups * product(kernel);
  } else if (l.inputs.size() > 1 && l.inputs[1].dimensions.size() >= 3 &&
             concrete(l.inputs[1].dimensions)) {
    perPoint = product(l.inputs[1].dimensions, 1);  // a Kiln report read back: W is an input
  } else {
    return std::nullopt;
  }
  const double points = deconvolution ? product(in) : product(out);
  double epilogue = parameterNumber(l, "HasBias", 0) > 0 ? 1 : 0;
  auto act = parameterJson(l, "Activation");
  if (act && act->is_string() && act->get<std::string>() != "NONE") epilogue += 1;
  return 2.0 * points * perPoint + product(out) * epilogue;
}

std::optional<double> trtexecMatmulFlops(const ReportLayer& l, const Dims& in, const Dims& out) {
  const double outMaps = parameterNumber(l, "OutMaps", -1);
  auto weights = parameterJson(l, "Weights");
  if (outMaps > 0 && weights && weights->is_object() && weights->contains("Count") &&
      (*weights)["Count"].is_number())
    return 2.0 * product(out) * ((*weights)["Count"].get<double>() / outMaps);
  if (in.empty()) return std::nullopt;
  auto op = parameterJson(l, "MatrixOpA");
  const bool transposed = op && op->is_string() && contains(op->get<std::string>(), "TRANSPOSE");
  if (transposed && in.size() < 2) return std::nullopt;
  return 2.0 * product(out) * static_cast<double>(transposed ? in[in.size() - 2] : in.back());
}

std::string fixed(double value, int decimals) {
  if (value < 0) return "-";
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

}  // namespace

double DevicePeaks::computePeak(const std::string& precision) const {
  // A peak left at 0 (a CPU calibration measures FP32 only) falls back to FP32's.
  if ((precision == "FP16" || precision == "BF16" || precision == "TF32") && fp16Flops > 0)
    return fp16Flops;
  if ((precision == "INT8" || precision == "FP8" || precision == "INT4" || precision == "FP4") &&
      int8Ops > 0)
    return int8Ops;
  return fp32Flops;
}

const std::vector<DevicePeaks>& knownDevicePeaks() {
  static const std::vector<DevicePeaks> kPeaks = [] {
    std::vector<DevicePeaks> out;
    for (const PeakEntry& e : peakEntries()) out.push_back(e.peaks);
    return out;
  }();
  return kPeaks;
}

std::string asciiLower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

namespace {

std::optional<DevicePeaks> vendorPeaks(const std::string& deviceName) {
  const std::string name = asciiLower(deviceName);
  for (const PeakEntry& e : peakEntries()) {
    if (asciiLower(e.peaks.name) == name) return e.peaks;
    if (std::all_of(e.keys.begin(), e.keys.end(), [&](const char* k) { return namesKey(name, k); }))
      return e.peaks;
  }
  return std::nullopt;
}

// Measured peaks, each field the calibration left at 0 taken from the vendor table.
DevicePeaks measuredOverVendor(const MeasuredPeaks& measured,
                               const std::optional<DevicePeaks>& vendor) {
  DevicePeaks peaks = measured.peaks;
  peaks.source = "measured " + measured.date + " (" + measured.method + ")";
  std::vector<std::string> fromVendor;
  const std::pair<double DevicePeaks::*, const char*> fields[] = {
      {&DevicePeaks::fp32Flops, "FP32"},
      {&DevicePeaks::fp16Flops, "FP16"},
      {&DevicePeaks::int8Ops, "INT8"},
      {&DevicePeaks::dramBytesPerSecond, "DRAM"}};
  for (const auto& [field, label] : fields) {
    if (peaks.*field > 0 || !vendor || (*vendor).*field <= 0) continue;
    peaks.*field = (*vendor).*field;
    fromVendor.push_back(label);
  }
  if (!fromVendor.empty()) {
    peaks.source += "; ";
    for (size_t i = 0; i < fromVendor.size(); ++i) peaks.source += (i ? ", " : "") + fromVendor[i];
    peaks.source += " from the vendor datasheet";
  }
  return peaks;
}

}  // namespace

std::optional<DevicePeaks> peaksForDevice(const std::string& deviceName) {
  std::optional<DevicePeaks> vendor = vendorPeaks(deviceName);
  if (auto measured = measuredPeaksFor(deviceName)) return measuredOverVendor(*measured, vendor);
  return vendor;
}

std::optional<double> layerNodeFlops(const Node& node, const ShapeInferenceResult& shapes) {
  if (node.outputs.empty() || node.inputs.empty()) return nodeFlops(node, shapes);
  const std::string& op = node.opType;
  if (op == "FusedConv" || op == "QuantizedConv" || op == "Conv") return convFlops(node, shapes);
  if (op == "FusedConvMaxPool") return convMaxPoolFlops(node, shapes);
  if (op == "FusedMatMul" || op == "QuantizedMatMul" || op == "Fp8MatMul")
    return matmulFlops(node, shapes);
  if (op == "FusedAttention") return attentionFlops(node, shapes);
  if (op == "Gemm") {  // nodeFlops counts the product; C adds one per output element
    auto product = nodeFlops(node, shapes);
    auto out = elementsOf(shapes, node.outputs[0]);
    if (!product || !out) return std::nullopt;
    return *product + (hasInput(node, 2) ? *out : 0.0);
  }
  if (op == "PointwiseChain") {
    const std::vector<std::string> ops = node.attrStrings("ops");
    auto out = elementsOf(shapes, node.outputs[0]);
    if (!out) return std::nullopt;
    return *out * static_cast<double>(std::count_if(
                      ops.begin(), ops.end(), [](const std::string& s) { return s != "Cast"; }));
  }
  if (op == "MaxPool" || op == "AveragePool") {
    auto out = elementsOf(shapes, node.outputs[0]);
    if (!out) return std::nullopt;
    return *out * product(node.attrInts("kernel_shape"));
  }
  static const std::set<std::string> kPerInput = {
      "GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum",  "ReduceMax",
      "ReduceMin",         "ReduceProd",    "Softmax",    "LogSoftmax", "ScaledMaskedSoftmax"};
  if (kPerInput.count(op)) return elementsOf(shapes, node.inputs[0]);
  return nodeFlops(node, shapes);
}

void annotatePlanFlops(const Plan& plan, EngineReport* report) {
  if (!plan.network) return;
  std::map<std::string, Shape> opt;
  if (!plan.profiles.empty())
    for (const auto& [input, range] : plan.profiles.front().inputs) opt[input] = range.opt;
  auto shapes = inferShapes(*plan.network, opt);
  if (!shapes.isOk()) return;
  const std::vector<Node>& nodes = plan.network->graph.nodes;
  std::map<std::string, const Node*> byName;
  for (const Node& n : nodes) byName.emplace(n.displayName(), &n);
  for (size_t i = 0; i < report->layers.size(); ++i) {
    ReportLayer& layer = report->layers[i];
    const Node* node =
        i < nodes.size() && nodes[i].displayName() == layer.name ? &nodes[i] : nullptr;
    if (!node) {
      auto it = byName.find(layer.name);
      if (it == byName.end()) continue;
      node = it->second;
    }
    layer.flops = layerNodeFlops(*node, *shapes).value_or(-1);
  }
}

std::optional<double> reportLayerFlops(const ReportLayer& l, std::string* why) {
  auto unknown = [why](const std::string& reason) -> std::optional<double> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (l.flops >= 0) return l.flops;
  const std::string type = typeOf(l);
  if (movesDataOnly(type)) return 0.0;
  if (l.outputs.empty()) return unknown("no output tensors recorded");
  const Dims in = l.inputs.empty() ? Dims{} : l.inputs[0].dimensions;
  const Dims& out = l.outputs[0].dimensions;
  if (!concrete(in) || !concrete(out) || out.empty()) return unknown("dynamic or missing dims");
  std::optional<double> flops;
  if (type == "Deconvolution")
    flops = trtexecConvFlops(l, in, out, true);
  else if (contains(type, "Convolution"))
    flops = trtexecConvFlops(l, in, out, false);
  else if (type == "MatrixMultiply" || type == "Gemm" || type == "FullyConnected" ||
           type == "MatMul")
    flops = trtexecMatmulFlops(l, in, out);
  else if (contains(type, "Pooling"))
    flops = product(out) * product(parameterDims(l, "WindowSize"));
  else if (type == "Reduce" || type == "SoftMax" || type == "Normalization")
    flops = in.empty() ? std::nullopt : std::optional<double>(product(in));
  else if (type == "ElementWise" || type == "Activation" || contains(type, "PointWise") ||
           type == "Unary" || type == "Scale")
    flops = product(out);
  else
    return unknown("no FLOP rule for layer type '" + type + "'");
  return flops ? flops : unknown("the export lacks the " + type + "'s kernel or channel counts");
}

std::optional<double> reportLayerBytes(const ReportLayer& l, std::string* why) {
  auto unknown = [why](const std::string& reason) -> std::optional<double> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (l.inputs.empty() && l.outputs.empty()) return unknown("no tensors recorded");
  double bytes = 0;
  for (const auto* list : {&l.inputs, &l.outputs})
    for (const ReportTensor& t : *list) {
      const int64_t size = elementBytes(precisionOfFormat(t.formatDatatype));
      if (!concrete(t.dimensions)) return unknown("dynamic dims in '" + t.name + "'");
      if (size == 0) return unknown("unknown data type of '" + t.name + "'");
      bytes += product(t.dimensions) * static_cast<double>(size);
    }
  for (const char* key : {"Weights", "Bias"}) {
    auto entry = parameterJson(l, key);
    if (!entry || !entry->is_object() || !entry->contains("Count")) continue;
    const json& count = (*entry)["Count"];
    const json type = entry->value("Type", json(""));
    if (count.is_number() && type.is_string())
      bytes += count.get<double>() *
               static_cast<double>(elementBytes(precisionOfFormat(type.get<std::string>())));
  }
  return bytes;
}

std::vector<LayerRoofline> layerRooflines(const EngineReport& report, const DevicePeaks* peaks) {
  std::vector<LayerRoofline> out;
  for (const ReportLayer& l : report.layers) {
    LayerRoofline r;
    std::string whyFlops, whyBytes;
    r.flops = reportLayerFlops(l, &whyFlops).value_or(-1);
    r.bytes = reportLayerBytes(l, &whyBytes).value_or(-1);
    r.unknown = !whyFlops.empty() ? "FLOPs: " + whyFlops : "";
    if (!whyBytes.empty()) r.unknown += (r.unknown.empty() ? "bytes: " : "; bytes: ") + whyBytes;
    if (r.flops >= 0 && r.bytes > 0) r.intensity = r.flops / r.bytes;
    const double seconds = l.milliseconds > 0 ? l.milliseconds * 1e-3 : -1;
    if (seconds > 0 && r.flops >= 0) r.achievedFlops = r.flops / seconds;
    if (seconds > 0 && r.bytes >= 0) r.achievedBytesPerSecond = r.bytes / seconds;
    if (peaks && r.intensity >= 0) {
      const double compute = peaks->computePeak(l.precision);
      r.roofFlops = std::min(compute, r.intensity * peaks->dramBytesPerSecond);
      if (r.achievedFlops >= 0 && r.roofFlops > 0)
        r.percentOfRoof = 100.0 * r.achievedFlops / r.roofFlops;
      else if (r.flops == 0 && r.achievedBytesPerSecond >= 0 && peaks->dramBytesPerSecond > 0)
        r.percentOfRoof = 100.0 * r.achievedBytesPerSecond / peaks->dramBytesPerSecond;
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string formatRooflineTable(const EngineReport& report, const DevicePeaks* peaks) {
  const std::vector<LayerRoofline> roofs = layerRooflines(report, peaks);
  size_t nameWidth = 5;
  for (const ReportLayer& l : report.layers) nameWidth = std::max(nameWidth, l.name.size());
  const int nw = static_cast<int>(std::min<size_t>(nameWidth, 48));
  std::ostringstream s;
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s  %-5s  %10s  %9s  %8s  %9s  %8s  %8s  %7s\n", nw, "layer",
                "prec", "GFLOP", "MB", "FLOP/B", "ms", "TFLOP/s", "GB/s", "% roof");
  s << line;
  double flops = 0, bytes = 0;
  size_t unknown = 0;
  for (size_t i = 0; i < roofs.size(); ++i) {
    const ReportLayer& l = report.layers[i];
    const LayerRoofline& r = roofs[i];
    if (l.name.size() > static_cast<size_t>(nw)) s << l.name << "\n";
    std::snprintf(
        line, sizeof(line), "%-*s  %-5s  %10s  %9s  %8s  %9s  %8s  %8s  %7s\n", nw,
        l.name.size() > static_cast<size_t>(nw) ? "" : l.name.c_str(),
        l.precision.empty() ? "-" : l.precision.c_str(),
        r.flops < 0 ? "?" : fixed(r.flops / 1e9, 4).c_str(),
        r.bytes < 0 ? "?" : fixed(r.bytes / 1e6, 3).c_str(), fixed(r.intensity, 1).c_str(),
        fixed(l.milliseconds, 4).c_str(),
        r.achievedFlops < 0 ? "-" : fixed(r.achievedFlops / 1e12, 3).c_str(),
        r.achievedBytesPerSecond < 0 ? "-" : fixed(r.achievedBytesPerSecond / 1e9, 1).c_str(),
        fixed(r.percentOfRoof, 1).c_str());
    s << line;
    if (r.flops < 0 || r.bytes < 0) ++unknown;
    flops += std::max(r.flops, 0.0);
    bytes += std::max(r.bytes, 0.0);
  }
  s << "total: " << fixed(flops / 1e9, 3) << " GFLOP, " << fixed(bytes / 1e6, 2) << " MB over "
    << roofs.size() << " layers";
  if (unknown) s << " (" << unknown << " with unknown counts: '?')";
  s << "\n";
  if (peaks) {
    s << "peaks: " << peaks->name << ": FP32 " << fixed(peaks->fp32Flops / 1e12, 1)
      << ", FP16/BF16 " << fixed(peaks->fp16Flops / 1e12, 1) << ", INT8 "
      << fixed(peaks->int8Ops / 1e12, 1) << " TFLOP/s; DRAM "
      << fixed(peaks->dramBytesPerSecond / 1e9, 0) << " GB/s; " << peaks->source << "\n";
  } else {
    s << "peaks: none for device '" << report.device
      << "' (no % of roofline; --device NAME picks a known GPU)\n";
  }
  return s.str();
}

}  // namespace kiln::inspector
