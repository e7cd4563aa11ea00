// `kiln export-onnx MODEL.onnx -o OUT.onnx --from PLAN.kiln | --constraints FILE |
// --calib-cache CACHE | --from PLAN.kiln --calib-cache CACHE`: the precision decisions of
// a plan or a constraints file, and INT8 ranges as Q/DQ pairs, written into the ONNX model
// as a strongly typed graph (TensorRT 11's `trtexec --stronglyTyped` input).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/calibration.h"
#include "kiln/file_io.h"
#include "kiln/onnx_import.h"
#include "kiln/plan.h"
#include "kiln/typed_onnx_export.h"

namespace kiln::cli {

const char kExportOnnxUsage[] =
    "usage: kiln export-onnx MODEL.onnx -o OUT.onnx (--from PLAN.kiln | --constraints FILE)\n"
    "                        [--precision fp16|bf16] [--keep-io-types] [--json]\n"
    "       kiln export-onnx MODEL.onnx -o OUT.onnx --calib-cache CACHE [--fp8]\n"
    "                        [--min-int8-conv-channels N] [--json]\n"
    "       kiln export-onnx MODEL.onnx -o OUT.onnx --from PLAN.kiln --calib-cache CACHE\n"
    "                        [--fp8] [--min-int8-conv-channels N] [--precision fp16|bf16]\n"
    "                        [--keep-io-types] [--json]\n"
    "  writes MODEL.onnx strongly typed: the nodes the plan ran in fp16/bf16 (or the\n"
    "  constraints file leaves free) compute in that type, the rest in float32, with\n"
    "  Cast nodes at the boundaries; weights read only by reduced nodes are stored\n"
    "  reduced. Build it with `trtexec --onnx=OUT.onnx --stronglyTyped` (TensorRT 11)\n"
    "  or `kiln build OUT.onnx --strongly-typed`. docs/strongly-typed-export.md\n"
    "  --from PLAN.kiln        each layer's precision, for the ONNX nodes it came from\n"
    "  --constraints FILE      `kiln debug precision`'s rules; unnamed nodes are free\n"
    "  --precision fp16|bf16   the reduced type (default: the plan's or the rules')\n"
    "  --keep-io-types         graph inputs and outputs stay float32\n"
    "  --calib-cache CACHE     INT8 instead: `kiln calibrate`'s ranges as Q/DQ pairs on the\n"
    "                          inputs of Conv/MatMul/Gemm (and residual Adds), their\n"
    "                          weights int8 with per-channel scales; with --from, the\n"
    "                          plan's INT8 layers float32 between those pairs and its\n"
    "                          fp16/bf16 layers in that type (an `--int8 --fp16` plan)\n"
    "  --fp8                   with --calib-cache: FP8 E4M3 Q/DQ for MatMul/Gemm layers\n"
    "                          (per-tensor scales amax/448; opset 19), other layers float\n"
    "  --min-int8-conv-channels N (8)  convolutions with fewer input channels stay float,\n"
    "                          as in Kiln's CUDA builds (0: quantize them all, as a CPU\n"
    "                          build does)\n";

namespace {

Result<NodePrecisions> decisionsFrom(const Args& args, const Network& network, DataType reduced) {
  if (args.has("from")) {
    KILN_ASSIGN_OR_RETURN(Plan plan, loadPlanFile(args.value("from")));
    return nodePrecisionsFromPlan(plan.record, network, args.value("from"), reduced);
  }
  KILN_ASSIGN_OR_RETURN(PrecisionConstraints constraints,
                        loadPrecisionConstraints(args.value("constraints")));
  return nodePrecisionsFromConstraints(constraints, network, args.value("constraints"), reduced);
}

nlohmann::json summaryJson(const TypedExportResult& r, const NodePrecisions& p,
                           const std::string& output) {
  return {{"output", output},
          {"source", p.source},
          {"reduced_nodes", r.reducedNodes},
          {"float32_nodes", r.float32NodeNames},
          {"casts_inserted", r.castsInserted},
          {"initializers_converted", r.initializersConverted},
          {"clamped_weights", r.clampedWeights},
          {"kept_float32", r.keptFloat32},
          {"warnings", p.warnings}};
}

void printSummary(const TypedExportResult& r, const NodePrecisions& p, const std::string& output) {
  std::string text = "strongly typed export of " + p.source + ": " +
                     std::to_string(r.reducedNodes) + " nodes reduced, " +
                     std::to_string(r.float32Nodes) + " float32, " +
                     std::to_string(r.castsInserted) + " casts inserted, " +
                     std::to_string(r.initializersConverted) + " initializers converted\n";
  if (!r.float32NodeNames.empty()) {
    text += "float32 nodes:";
    for (const std::string& n : r.float32NodeNames) text += " " + n;
    text += "\n";
  }
  for (const std::string& k : r.keptFloat32) text += "kept float32: " + k + "\n";
  if (r.clampedWeights > 0)
    text += "warning: " + std::to_string(r.clampedWeights) +
            " weight values past the fp16 range were clamped to +-65504\n";
  for (const std::string& w : p.warnings) text += "warning: " + w + "\n";
  text += "written: " + output + "\nTensorRT 11: trtexec --onnx=" + output + " --stronglyTyped\n";
  printReportText(text);
}

// --calib-cache's Q/DQ export of the model (exit code in `code` when it fails); with a
// plan, only the layers it ran quantized get pairs (calibrationFollowingPlan).
Result<QdqExportResult> qdqExport(const Args& args, int* code, const Plan* plan = nullptr,
                                  const Network* network = nullptr) {
  *code = 1;
  const std::string cache = args.value("calib-cache");
  KILN_ASSIGN_OR_RETURN(CalibrationTable table, loadCalibrationCache(cache));
  if (plan && network) table = calibrationFollowingPlan(table, plan->record, *network);
  int64_t minChannels = kQdqGpuMinConvChannels;
  if (Status s = args.intValue("min-int8-conv-channels", kQdqGpuMinConvChannels, &minChannels);
      !s.isOk() || minChannels < 0 || minChannels > 4096) {
    *code = 2;
    return invalidArgument("--min-int8-conv-channels takes 0..4096");
  }
  return exportQdqOnnx(args.positional()[0], table, cache,
                       args.flag("fp8") ? QdqFormat::kFp8 : QdqFormat::kInt8,
                       static_cast<int>(minChannels));
}

nlohmann::json qdqJson(const QdqExportResult& r, bool fp8) {
  return {{"activation_pairs", r.activationPairs},
          {"format", fp8 ? "fp8e4m3" : "int8"},
          {fp8 ? "fp8_weight_layers" : "int8_weight_layers", r.weightDequantizers},
          {"folded_batch_norms", r.foldedBatchNorms},
          {"float_layers", r.floatLayers}};
}

std::string qdqText(const QdqExportResult& r, bool fp8, const std::string& cache) {
  std::string text =
      std::string(fp8 ? "FP8 E4M3" : "INT8") + " Q/DQ export of calibration cache '" + cache +
      "': " + std::to_string(r.weightDequantizers) +
      (fp8 ? " GEMMs with per-tensor fp8 weights, " : " layers with per-channel int8 weights, ") +
      std::to_string(r.activationPairs) + " activation Q/DQ pairs" +
      (r.foldedBatchNorms > 0
           ? ", " + std::to_string(r.foldedBatchNorms) + " BatchNormalizations folded into them"
           : std::string()) +
      "\n";
  for (const std::string& f : r.floatLayers) text += "left float: " + f + "\n";
  return text;
}

// --calib-cache: explicit INT8 (Q/DQ) from a `kiln calibrate` cache.
int exportQdq(const Args& args) {
  const std::string output = args.value("output");
  const std::string cache = args.value("calib-cache");
  const bool fp8 = args.flag("fp8");
  int code = 1;
  auto exported = qdqExport(args, &code);
  if (!exported.isOk()) return fail("export-onnx", exported.status().message(), code);
  if (Status s = writeFileAtomically(output, exported->bytes, "the ONNX export"); !s.isOk())
    return fail("export-onnx", s.message());
  if (args.flag("json")) {
    nlohmann::json summary = qdqJson(*exported, fp8);
    summary["output"] = output;
    summary["source"] = "calibration cache '" + cache + "'";
    std::printf("%s\n",
                summary.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  printReportText(qdqText(*exported, fp8, cache) + "written: " + output +
                  "\nTensorRT 11: trtexec --onnx=" + output + " --stronglyTyped\n");
  return 0;
}

// --from PLAN --calib-cache CACHE: the cache's Q/DQ pairs, the plan's INT8 layers float32
// between them and its other layers in the precisions they ran in (Casts at the
// boundaries), for an `--int8 --fp16` plan in one strongly typed model.
int exportQdqWithPlan(const Args& args, DataType reduced) {
  const std::string model = args.positional()[0];
  const std::string output = args.value("output");
  const bool fp8 = args.flag("fp8");
  ImportOptions importOptions;
  importOptions.checkSupport = false;
  auto network = importOnnxFile(model, importOptions);
  if (!network.isOk()) return fail("export-onnx", network.status().message());
  auto plan = loadPlanFile(args.value("from"));
  if (!plan.isOk()) return fail("export-onnx", plan.status().message());
  auto precisions = nodePrecisionsFromPlan(plan->record, *network, args.value("from"), reduced,
                                           QuantizedLayers::kAsQdqFloat32);
  if (!precisions.isOk()) return fail("export-onnx", precisions.status().message());
  int code = 1;
  auto qdq = qdqExport(args, &code, &plan.value(), &network.value());
  if (!qdq.isOk()) return fail("export-onnx", qdq.status().message(), code);
  TypedExportOptions options;
  options.keepIoTypes = args.flag("keep-io-types");
  auto exported = exportStronglyTypedOnnxBytes(qdq->bytes, model, *precisions, options);
  if (!exported.isOk()) return fail("export-onnx", exported.status().message());
  if (Status s = writeFileAtomically(output, exported->bytes, "the ONNX export"); !s.isOk())
    return fail("export-onnx", s.message());
  if (args.flag("json")) {
    nlohmann::json summary = summaryJson(*exported, *precisions, output);
    summary.update(qdqJson(*qdq, fp8));
    std::printf("%s\n",
                summary.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  printReportText(qdqText(*qdq, fp8, args.value("calib-cache")));
  printSummary(*exported, *precisions, output);
  return 0;
}

}  // namespace

int runExportOnnx(const std::vector<std::string>& rawArgs) {
  std::vector<std::string> argv = rawArgs;
  for (std::string& a : argv)
    if (a == "-o") a = "--output";
  Args args({"output", "from", "constraints", "precision", "calib-cache", "min-int8-conv-channels"},
            {"keep-io-types", "json", "fp8"});
  if (Status s = args.parse(argv); !s.isOk()) return fail("export-onnx", s.message(), 2);
  if (args.positional().size() != 1 || !args.has("output")) return printUsage(kExportOnnxUsage, 2);
  const int sources = args.has("from") + args.has("constraints") + args.has("calib-cache");
  const bool combined = args.has("from") && args.has("calib-cache") && !args.has("constraints");
  if (sources != 1 && !combined)
    return fail("export-onnx",
                "give exactly one of --from PLAN.kiln, --constraints FILE and --calib-cache FILE "
                "(--calib-cache also combines with --from)",
                2);
  if (args.flag("fp8") && !args.has("calib-cache"))
    return fail("export-onnx", "--fp8 needs --calib-cache (the ranges its scales come from)", 2);
  if (args.has("calib-cache") && !combined && (args.has("precision") || args.flag("keep-io-types")))
    return fail("export-onnx",
                "--precision and --keep-io-types do not apply to --calib-cache alone (INT8 Q/DQ "
                "keeps float32 between the pairs and at the interface; add --from PLAN for an "
                "INT8 + FP16 model)",
                2);
  DataType reduced = DataType::kUndefined;
  if (args.has("precision")) {
    const std::string p = args.value("precision");
    if (p != "fp16" && p != "bf16")
      return fail("export-onnx", "--precision '" + p + "': use fp16 or bf16", 2);
    reduced = p == "fp16" ? DataType::kFloat16 : DataType::kBFloat16;
  }
  if (combined) return exportQdqWithPlan(args, reduced);
  if (args.has("calib-cache")) return exportQdq(args);
  const std::string model = args.positional()[0];
  const std::string output = args.value("output");
  ImportOptions importOptions;
  importOptions.checkSupport = false;
  auto network = importOnnxFile(model, importOptions);
  if (!network.isOk()) return fail("export-onnx", network.status().message());
  auto precisions = decisionsFrom(args, *network, reduced);
  if (!precisions.isOk()) return fail("export-onnx", precisions.status().message());
  TypedExportOptions options;
  options.keepIoTypes = args.flag("keep-io-types");
  auto exported = exportStronglyTypedOnnx(model, *precisions, options);
  if (!exported.isOk()) return fail("export-onnx", exported.status().message());
  if (Status s = writeFileAtomically(output, exported->bytes, "the ONNX export"); !s.isOk())
    return fail("export-onnx", s.message());
  if (args.flag("json")) {
    std::printf("%s\n", summaryJson(*exported, *precisions, output)
                            .dump(1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
    return 0;
  }
  printSummary(*exported, *precisions, output);
  return 0;
}

}  // namespace kiln::cli
