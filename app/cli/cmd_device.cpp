// `kiln device [--calibrate] [--json]`: the devices of this machine and the peaks the
// roofline uses for each; --calibrate measures the host CPU's (inspector/measured_peaks.h).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "kiln/cuda_runtime.h"
#include "kiln/plan_identity.h"
#include "measured_peaks.h"

namespace kiln::cli {

const char kDeviceUsage[] =
    "usage: kiln device [--calibrate] [--json]\n"
    "  the devices of this machine (the host CPU, the CUDA device when usable) and the\n"
    "  peaks `kiln inspect --roofline`, `kiln advise` and the studio use for each: measured\n"
    "  ones first, else the vendor table (GPUs), else none\n"
    "  --calibrate   measure the host CPU: an FP32 GEMM through OpenBLAS (2048^3, best of\n"
    "                5) and a 256 MiB memcpy (best of 5; read + write bytes), stored under\n"
    "                its name in ~/.config/kiln/device_peaks.json (KILN_DEVICE_PEAKS: another\n"
    "                file), where plans built on this CPU find them\n"
    "  --json        the devices and their peaks as JSON\n";

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Best of `runs` timings of `work` after one untimed run.
template <class Work>
double bestSeconds(int runs, Work work) {
  work();
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    work();
    best = std::min(best, seconds(start, Clock::now()));
  }
  return best;
}

inspector::MeasuredPeaks calibrateHostCpu(const std::string& name) {
  constexpr int n = 2048;
  std::vector<float> a(size_t{n} * n), b(size_t{n} * n), c(size_t{n} * n);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
    b[i] = static_cast<float>(i % 13) * 0.02f - 0.12f;
  }
  const double gemm = bestSeconds(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n,
                b.data(), n, 0.0f, c.data(), n);
  });
  constexpr size_t kBytes = size_t{256} << 20;
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  const double copy = bestSeconds(5, [&] { std::memcpy(to.data(), from.data(), kBytes); });
  inspector::MeasuredPeaks m;
  m.peaks.name = name;
  m.peaks.fp32Flops = 2.0 * n * n * n / gemm;
  m.peaks.dramBytesPerSecond = 2.0 * kBytes / copy;  // each byte read once and written once
  char date[16];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::localtime(&now));
  m.date = date;
  m.method = "OpenBLAS sgemm 2048^3 and memcpy 256 MiB, best of 5 each";
  return m;
}

// One device: its name, kind and the peaks the roofline would use.
json deviceJson(const std::string& kind, const std::string& name) {
  json d = {{"kind", kind}, {"name", name}};
  if (auto measured = inspector::measuredPeaksFor(name)) {
    d["peaks_from"] = "measured " + measured->date + " (" + measured->method + ")";
    d["fp32_tflops"] = measured->peaks.fp32Flops / 1e12;
    d["dram_gb_per_s"] = measured->peaks.dramBytesPerSecond / 1e9;
    if (measured->peaks.fp16Flops > 0) d["fp16_tflops"] = measured->peaks.fp16Flops / 1e12;
  } else if (auto table = inspector::peaksForDevice(name)) {
    d["peaks_from"] = "vendor table (" + table->name + ")";
    d["fp32_tflops"] = table->fp32Flops / 1e12;
    d["fp16_tflops"] = table->fp16Flops / 1e12;
    d["int8_tops"] = table->int8Ops / 1e12;
    d["dram_gb_per_s"] = table->dramBytesPerSecond / 1e9;
  } else {
    d["peaks_from"] = kind == "cpu" ? "none: kiln device --calibrate measures them"
                                    : "none: a GPU the vendor table does not know";
  }
  return d;
}

std::string deviceLine(const json& d) {
  char line[512];
  std::snprintf(line, sizeof line, "%-5s %s\n      peaks: %s", d["kind"].get<std::string>().c_str(),
                d["name"].get<std::string>().c_str(),
                d["peaks_from"].get<std::string>().c_str());
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
  Args args({}, {"calibrate", "json"});
  if (Status s = args.parse(argv); !s.isOk()) return fail("device", s.message(), 2);
  if (!args.positional().empty()) return printUsage(kDeviceUsage, 2);
  const std::string cpu = cpuPlanIdentity().deviceName;
  if (args.flag("calibrate")) {
    const std::string path = inspector::measuredPeaksPath();
    // A file that cannot take the result is refused before a second is spent measuring.
    if (auto existing = inspector::loadMeasuredPeaks(path); !existing.isOk())
      return fail("device", existing.status().message());
    std::fprintf(stderr, "kiln device: calibrating %s (about a second)\n", cpu.c_str());
    const inspector::MeasuredPeaks measured = calibrateHostCpu(cpu);
    if (Status s = inspector::saveMeasuredPeaks(measured, path); !s.isOk())
      return fail("device", s.message());
    std::fprintf(stderr, "kiln device: %.1f GFLOP/s FP32, %.1f GB/s, saved in %s\n",
                 measured.peaks.fp32Flops / 1e9, measured.peaks.dramBytesPerSecond / 1e9,
                 path.c_str());
  }
  json devices = json::array({deviceJson("cpu", cpu)});
  const cuda::DeviceInfo gpu = cuda::probeCudaDevice();
  if (gpu.available) devices.push_back(deviceJson("cuda", gpu.name));
  if (args.flag("json")) {
    std::printf("%s\n", json{{"devices", devices}, {"peaks_file", inspector::measuredPeaksPath()}}
                            .dump(1)
                            .c_str());
    return 0;
  }
  for (const json& d : devices) std::printf("%s", deviceLine(d).c_str());
  if (!gpu.available) std::printf("cuda  none: %s\n", gpu.reason.c_str());
  return 0;
}

}  // namespace kiln::cli
