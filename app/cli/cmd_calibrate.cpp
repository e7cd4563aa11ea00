// `kiln calibrate MODEL.onnx --data DIR -o CACHE`: post-training INT8 calibration on
// the CUDA runtime (FP32, TF32 off) when a GPU is usable, else on the CPU reference
// (TensorRT's calibrators, trtexec --calib's cache, in Kiln's editable text format).
// Ctrl-C cancels between batches.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/calibration_inputs.h"
#include "cli/commands.h"
#include "kiln/backends.h"
#include "kiln/calibration.h"
#include "kiln/file_io.h"
#include "kiln/calibration_data.h"
#include "kiln/cuda_calibration.h"
#include "kiln/onnx_import.h"

namespace kiln::cli {

const char kCalibrateUsage[] =
    "usage: kiln calibrate MODEL.onnx --data DIR -o CACHE [options]\n"
    "  --data DIR                       samples: .npy / .pb tensors ([C,H,W] or batched\n"
    "                                   [N,C,H,W]) or .ppm/.pgm images (need --preprocess)\n"
    "  --method entropy|minmax|percentile (entropy)\n"
    "  --percentile P (99.99)           for --method percentile\n"
    "  --batch N (8)                    samples per calibration batch\n"
    "  --preprocess SPEC                image preprocessing spec (size, mean, std, channels,\n"
    "                                   layout); saved beside the cache as CACHE.preprocess\n"
    "  --input NAME                     the input the data feeds (models with several);\n"
    "                                   without it such a model reads DIR/<input name>/ for\n"
    "                                   each input, the k-th files of each together\n"
    "  --backend cpu|cuda               cuda when a usable GPU exists, else cpu\n"
    "  --histograms FILE.json           also write every tensor's histogram\n"
    "  --quiet | --json                 no progress / the ranges as JSON\n"
    "The cache is text (tensor name and range per line): edit a range, or write\n"
    "'pin fp16' to keep a tensor in float, then kiln build --int8 --calib-cache CACHE.\n";

namespace {

std::atomic<bool> g_cancel{false};

extern "C" void onInterrupt(int) {
  g_cancel.store(true);
}

nlohmann::json histogramsJson(const CalibrationHistograms& histograms, double percentile) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, h] : histograms) {
    out[name] = {{"bin_width", h.binWidth()},
                 {"min", h.minValue()},
                 {"max", h.maxValue()},
                 {"count", h.count()},
                 {"amax",
                  {{"entropy", h.amax(CalibrationMethod::kEntropy)},
                   {"minmax", h.amax(CalibrationMethod::kMinMax)},
                   {"percentile", h.amax(CalibrationMethod::kPercentile, percentile)}}},
                 {"bins", h.bins()}};
  }
  return out;
}

Status writeText(const std::string& path, const std::string& text) {
  return writeFileAtomically(path, text, "the report");
}

// The backend option: "" is the default (the GPU when one is usable).
bool parseBackend(const std::string& text, cuda::CalibrationBackend* out) {
  if (text.empty()) {
    *out = cuda::CalibrationBackend::kDefault;
    return true;
  }
  return cuda::parseCalibrationBackend(text, out);
}

// Progress on one terminal line (when `progress`); notices on their own lines (not with
// --json). `midLine` tells whether a progress line is still open.
void reportOnStderr(CalibrationOptions* options, bool progress, bool json, bool* midLine) {
  options->onProgress = [progress, midLine](const CalibrationProgress& p) {
    if (!progress) return;
    std::fprintf(stderr, "\rcalibrating: batch %d/%d", p.batchesDone, p.batchesTotal);
    *midLine = true;
  };
  options->onNotice = [json, midLine](const std::string& text) {
    if (json) return;
    std::fprintf(stderr, "%skiln calibrate: %s\n", *midLine ? "\n" : "",
                 escapeControlCharacters(text).c_str());
    *midLine = false;
  };
}

void printRanges(const CalibrationResult& result, size_t limit) {
  std::printf("%-40s %12s %12s %12s\n", "tensor", "min", "max", "range");
  size_t shown = 0;
  for (const auto& [name, range] : result.table.tensors) {
    if (shown++ == limit) {
      std::printf("... %zu more (all in the cache)\n", result.table.tensors.size() - limit);
      break;
    }
    const TensorHistogram& h = result.histograms.at(name);
    std::printf("%-40.40s %12.5g %12.5g %12.5g\n", name.c_str(), h.minValue(), h.maxValue(),
                range.amax);
  }
}

}  // namespace

int runCalibrate(const std::vector<std::string>& rawArgs) {
  std::vector<std::string> argv = rawArgs;
  for (std::string& a : argv)
    if (a == "-o") a = "--output";
  Args args({"data", "output", "method", "percentile", "batch", "preprocess", "input", "histograms",
             "backend"},
            {"quiet", "json"});
  if (Status parsed = args.parse(argv); !parsed.isOk())
    return fail("calibrate", parsed.message(), 2);
  if (args.positional().size() != 1 || !args.has("data") || !args.has("output"))
    return printUsage(kCalibrateUsage, 2);
  CalibrationOptions options;
  if (!parseCalibrationMethod(args.value("method", "entropy"), &options.method))
    return fail("calibrate", "--method takes entropy, minmax or percentile", 2);
  int64_t batch;
  if (Status s = args.doubleValue("percentile", 99.99, &options.percentile); !s.isOk())
    return fail("calibrate", s.message(), 2);
  if (Status s = args.intValue("batch", 8, &batch); !s.isOk())
    return fail("calibrate", s.message(), 2);
  if (batch < 1 || batch > 65536) return fail("calibrate", "--batch must be in 1..65536", 2);
  cuda::CalibrationBackend backend;
  if (args.has("backend")) {
    if (auto found = findBackend(args.value("backend")); !found.isOk())
      return fail("calibrate", found.status().message(), 2);
  }
  if (!parseBackend(args.value("backend"), &backend))
    return fail("calibrate", "calibration does not run on backend '" + args.value("backend") + "'",
                2);

  const std::string model = args.positional()[0];
  auto network = importOnnxFile(model);
  if (!network.isOk()) return fail("calibrate", network.status().message());
  auto batches = loadDataBatches(*network, args.value("data"), args.value("preprocess"),
                                 args.value("input"), static_cast<int>(batch));
  if (!batches.isOk()) return fail("calibrate", batches.status().message());

  const bool quiet = args.flag("quiet") || args.flag("json");
  const bool terminal = isatty(fileno(stderr)) != 0;
  options.cancel = &g_cancel;
  bool midLine = false;
  reportOnStderr(&options, !quiet && terminal, args.flag("json"), &midLine);
  std::signal(SIGINT, onInterrupt);
  auto result = cuda::calibrateOnBackend(*network, *batches, options, backend);
  std::signal(SIGINT, SIG_DFL);
  if (midLine) std::fprintf(stderr, "\n");
  if (!result.isOk()) return fail("calibrate", model + ": " + result.status().message());

  const std::string cache = args.value("output");
  if (args.has("preprocess")) {
    auto spec = loadPreprocessSpec(args.value("preprocess"));
    if (!spec.isOk()) return fail("calibrate", spec.status().message());
    const std::string specPath = cache + ".preprocess";
    if (Status s = savePreprocessSpec(*spec, specPath); !s.isOk())
      return fail("calibrate", s.message());
    result->table.preprocessingFile = std::filesystem::path(specPath).filename().string();
  }
  if (Status s = saveCalibrationCache(result->table, cache); !s.isOk())
    return fail("calibrate", s.message());
  if (args.has("histograms")) {
    const std::string text = histogramsJson(result->histograms, options.percentile).dump();
    if (Status s = writeText(args.value("histograms"), text); !s.isOk())
      return fail("calibrate", s.message());
  }
  if (args.flag("json")) {
    nlohmann::json ranges = nlohmann::json::object();
    for (const auto& [name, range] : result->table.tensors) ranges[name] = range.amax;
    nlohmann::json out = {{"cache", cache},
                          {"method", result->table.method},
                          {"samples", result->table.samples},
                          {"batches", batches->size()},
                          {"backend", result->backend},
                          {"seconds", result->seconds},
                          {"ranges", ranges}};
    if (!result->fallback.empty()) out["fallback"] = result->fallback;
    std::printf("%s\n", out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (!args.flag("quiet")) printRanges(*result, 30);
  std::printf("calibrated %zu tensors on %d samples (%s) on %s in %.2f s: %s\n",
              result->table.tensors.size(), result->table.samples, result->table.method.c_str(),
              result->backend.c_str(), result->seconds, cache.c_str());
  return 0;
}

}  // namespace kiln::cli
