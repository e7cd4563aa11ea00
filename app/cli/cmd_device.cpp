// `kiln device [--calibrate] [--json]`: the devices of this machine and the peaks the
// roofline uses for each; --calibrate measures the host CPU's (inspector/measured_peaks.h).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/device_calibration.h"
#include "kiln/cuda_runtime.h"
#include "kiln/plan_identity.h"
#include "measured_peaks.h"

namespace kiln::cli {

const char kDeviceUsage[] =
    "usage: kiln device [--calibrate [--backend cpu|cuda]] [--json]\n"
    "  the devices of this machine (the host CPU, the CUDA device when usable) and the\n"
    "  peaks `kiln inspect --roofline`, `kiln advise` and the studio use for each: measured\n"
    "  ones first, else the vendor table (GPUs), else none\n"
    "  --calibrate   measure the device: cpu (the default): an FP32 GEMM through OpenBLAS\n"
    "                (2048^3) and a 256 MiB memcpy, best of 5; cuda: Kiln's CUDA engine on\n"
    "                MatMul 8192^3 FP16, 4096^3 FP32 (no TF32) and a Relu over 1 GiB,\n"
    "                median of 10 profiled runs; stored under the device's name in\n"
    "                ~/.config/kiln/device_peaks.json (KILN_DEVICE_PEAKS: another file),\n"
    "                where plans built on that device find them\n"
    "  --json        the devices and their peaks as JSON\n";

namespace {

using nlohmann::json;

// One device: its name, kind and the peaks the roofline would use.
json deviceJson(const std::string& kind, const std::string& name) {
  json d = {{"kind", kind}, {"name", name}};
  if (auto measured = inspector::measuredPeaksFor(name)) {
    d["peaks_from"] = "measured " + measured->date + " (" + measured->method + ")";
    d["fp32_tflops"] = measured->peaks.fp32Flops / 1e12;
    d["dram_gb_per_s"] = measured->peaks.dramBytesPerSecond / 1e9;
    if (measured->peaks.fp16Flops > 0) d["fp16_tflops"] = measured->peaks.fp16Flops / 1e12;
    if (measured->peaks.int8Ops > 0) d["int8_tops"] = measured->peaks.int8Ops / 1e12;
  } else if (auto table = inspector::peaksForDevice(name)) {
    d["peaks_from"] = "vendor table (" + table->name + ")";
    d["fp32_tflops"] = table->fp32Flops / 1e12;
    d["fp16_tflops"] = table->fp16Flops / 1e12;
    d["int8_tops"] = table->int8Ops / 1e12;
    d["dram_gb_per_s"] = table->dramBytesPerSecond / 1e9;
  } else {
    d["peaks_from"] = kind == "cpu" ? "none: kiln device --calibrate measures them"
                                    : "none: kiln device --calibrate --backend cuda measures them";
  }
  return d;
}

std::string deviceLine(const json& d) {
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %s\n      peaks: %s", d["kind"].get<std::string>().c_str(),
                d["name"].get<std::string>().c_str(), d["peaks_from"].get<std::string>().c_str());
  std::string text = line;
  for (const char* key : {"fp32_tflops", "fp16_tflops", "int8_tops", "dram_gb_per_s"}) {
    if (!d.contains(key)) continue;
    std::snprintf(line, sizeof line, "; %s %.3f", key, d[key].get<double>());
    text += line;
  }
  return text + "\n";
}

}  // namespace

int runDevice(const std::vector<std::string>& argv) {
  Args args({"backend"}, {"calibrate", "json"});
  if (Status s = args.parse(argv); !s.isOk()) return fail("device", s.message(), 2);
  if (!args.positional().empty()) return printUsage(kDeviceUsage, 2);
  const std::string cpu = cpuPlanIdentity().deviceName;
  if (args.flag("calibrate")) {
    const std::string path = inspector::measuredPeaksPath();
    // A file that cannot take the result is refused before a second is spent measuring.
    if (auto existing = inspector::loadMeasuredPeaks(path); !existing.isOk())
      return fail("device", existing.status().message());
    const std::string backend = args.value("backend", "cpu");
    if (backend != "cpu" && backend != "cuda")
      return fail("device", "--backend '" + backend + "': use cpu or cuda", 2);
    inspector::MeasuredPeaks measured;
    if (backend == "cuda") {
      const cuda::DeviceInfo device = cuda::probeCudaDevice();
      if (!device.available) return fail("device", "no usable CUDA device: " + device.reason);
      std::fprintf(stderr, "kiln device: calibrating %s (a few seconds)\n", device.name.c_str());
      auto gpu = calibrateCudaDevice(0);
      if (!gpu.isOk()) return fail("device", gpu.status().message());
      measured = *gpu;
    } else {
      std::fprintf(stderr, "kiln device: calibrating %s (about a second)\n", cpu.c_str());
      measured = calibrateHostCpu(cpu);
    }
    if (Status s = inspector::saveMeasuredPeaks(measured, path); !s.isOk())
      return fail("device", s.message());
    std::fprintf(stderr,
                 "kiln device: %.1f GFLOP/s FP32, %.1f GFLOP/s FP16, %.1f GB/s, saved in %s\n",
                 measured.peaks.fp32Flops / 1e9, measured.peaks.fp16Flops / 1e9,
                 measured.peaks.dramBytesPerSecond / 1e9, path.c_str());
  }
  json devices = json::array({deviceJson("cpu", cpu)});
  const cuda::DeviceInfo gpu = cuda::probeCudaDevice();
  if (gpu.available) devices.push_back(deviceJson("cuda", gpu.name));
  if (args.flag("json")) {
    std::printf(
        "%s\n",
        json{{"devices", devices}, {"peaks_file", inspector::measuredPeaksPath()}}.dump(1).c_str());
    return 0;
  }
  for (const json& d : devices) std::printf("%s", deviceLine(d).c_str());
  if (!gpu.available) std::printf("cuda  none: %s\n", gpu.reason.c_str());
  return 0;
}

}  // namespace kiln::cli
