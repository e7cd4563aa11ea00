// Throughput/latency measurement of a CUDA engine as trtexec does it: each
// inference copies inputs host->device, enqueues the network and copies outputs
// back (unless data transfers are off), on one or more streams, each with its own
// execution context; warm-up by time, then at least `iterations` inferences and at
// least `durationSeconds`. Per-inference timestamps come from CUDA events and the
// host clock; an optional separate pass records per-layer times.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/cuda_runtime.h"
#include "kiln/reference_backend.h"

namespace kiln::cuda {

struct BenchmarkOptions {
  double warmupMs = 200;
  int64_t iterations = 10;
  double durationSeconds = 3;
  int streams = 1;
  bool dataTransfers = true;
  bool cudaGraph = false;
  int64_t profileIterations = 0;  // > 0: a separate per-layer profiling pass
};

// One inference, in milliseconds since the benchmark started (trtexec --exportTimes).
struct InferenceTiming {
  double startEnqMs = 0, endEnqMs = 0;
  double startH2dMs = 0, endH2dMs = 0;
  double startComputeMs = 0, endComputeMs = 0;
  double startD2hMs = 0, endD2hMs = 0;
  int stream = 0;
};

struct BenchmarkResult {
  std::vector<InferenceTiming> inferences;  // measured ones only, in completion order
  double hostWalltimeMs = 0;                // first measured start to last measured end
  int64_t warmupInferences = 0;
  std::vector<LayerTiming> layerTimings;  // from the profiling pass
  std::vector<LayerInfo> layers;
  int64_t activationBytes = 0;
  int64_t activationBytesWithoutReuse = 0;
  int64_t weightBytes = 0;
  std::vector<NamedTensor> outputs;  // of the first context's last inference
};

// `inputs` must give every graph input (host tensors of the binding types).
Result<BenchmarkResult> runBenchmark(Engine& engine, const std::map<std::string, Tensor>& inputs,
                                     const BenchmarkOptions& options);

}  // namespace kiln::cuda
