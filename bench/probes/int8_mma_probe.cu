// Probe (issue 8, not a test): how fast is Kiln's INT8 implicit-GEMM kernel
// (engine/backends/cuda/ops/int8_conv_mma.h) on ResNet-50's layer shapes at a batch,
// each tile shape, against the floor of its bytes: a streaming kernel that reads the
// layer's X and Z and writes its Y (the same byte counts, no math) on the same GPU.
// Prints, per layer, milliseconds (median of 20 after 3 warm-ups) and TB/s.
// Usage: kiln_int8_mma_probe [batch [layer-index [tile-name]]] (one layer, one tile:
// for a profiler).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/ops/int8_conv_mma.h"

using namespace kiln;
using namespace kiln::cuda;

namespace {

#define PROBE_CHECK(expr)                                                                       \
  do {                                                                                          \
    cudaError_t e = (expr);                                                                     \
    if (e != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

struct Layer {
  const char* name;
  int64_t h, w, c, k, r, stride, pad;
  bool residual;
};

// Reads x (xPieces of 16 bytes) and z, writes y = z: the layer's traffic, no math.
__global__ void streamKernel(const int4* x, int64_t xPieces, const int4* z, int4* y,
                             int64_t yPieces, int* sink) {
  int acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < yPieces;
       i += stride)
    y[i] = z ? z[i] : make_int4(static_cast<int>(i), 0, 0, 0);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < xPieces;
       i += stride) {
    const int4 v = x[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x7fffffff) *sink = acc;
}

template <class F>
float medianMs(F run) {
  cudaEvent_t start, stop;
  PROBE_CHECK(cudaEventCreate(&start));
  PROBE_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) run();
  std::vector<float> times;
  for (int i = 0; i < 20; ++i) {
    PROBE_CHECK(cudaEventRecord(start));
    run();
    PROBE_CHECK(cudaEventRecord(stop));
    PROBE_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    PROBE_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  PROBE_CHECK(cudaEventDestroy(start));
  PROBE_CHECK(cudaEventDestroy(stop));
  return times[times.size() / 2];
}

void* randomBytes(int64_t bytes, unsigned seed) {
  std::vector<int8_t> host(static_cast<size_t>(bytes));
  std::mt19937 rng(seed);
  for (auto& v : host) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  void* d = nullptr;
  PROBE_CHECK(cudaMalloc(&d, bytes));
  PROBE_CHECK(cudaMemcpy(d, host.data(), bytes, cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 256;
  const int onlyLayer = argc > 2 ? std::atoi(argv[2]) : -1;
  const std::string onlyTile = argc > 3 ? argv[3] : "";
  cudaDeviceProp prop{};
  PROBE_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, batch %lld\n", prop.name, static_cast<long long>(batch));
  const Layer layers[] = {
      {"layer1 conv1 64>64", 56, 56, 64, 64, 1, 1, 0, false},
      {"layer1 conv2 3x3 64", 56, 56, 64, 64, 3, 1, 1, false},
      {"layer1 ds 64>256", 56, 56, 64, 256, 1, 1, 0, false},
      {"layer1 conv3 64>256+Z", 56, 56, 64, 256, 1, 1, 0, true},
      {"layer2 conv1 512>128", 28, 28, 512, 128, 1, 1, 0, false},
      {"layer2 ds s2 256>512", 56, 56, 256, 512, 1, 2, 0, false},
      {"layer2 conv3 128>512+Z", 28, 28, 128, 512, 1, 1, 0, true},
      {"layer3 conv2 3x3 256", 14, 14, 256, 256, 3, 1, 1, false},
      {"layer3 conv3 256>1024+Z", 14, 14, 256, 1024, 1, 1, 0, true},
      {"layer4 conv3 512>2048+Z", 7, 7, 512, 2048, 1, 1, 0, true},
  };
  int* sink = nullptr;
  PROBE_CHECK(cudaMalloc(&sink, sizeof(int)));
  std::printf("%-26s %9s %8s %s\n", "layer", "stream ms", "TB/s", "kiln tiles: ms (TB/s)");
  int index = -1;
  for (const Layer& l : layers) {
    if (++index != onlyLayer && onlyLayer >= 0) continue;
    Int8ConvMmaShape s;
    s.n = batch;
    s.h = l.h;
    s.w = l.w;
    s.c = l.c;
    s.k = l.k;
    s.r = s.s = l.r;
    s.strideH = s.strideW = static_cast<int>(l.stride);
    s.padH = s.padW = static_cast<int>(l.pad);
    s.p = (l.h + 2 * l.pad - l.r) / l.stride + 1;
    s.q = (l.w + 2 * l.pad - l.r) / l.stride + 1;
    const int64_t xBytes = batch * l.h * l.w * l.c, yBytes = batch * s.p * s.q * l.k;
    const int64_t xRead = l.stride == 1 ? xBytes : batch * s.p * s.q * l.c;
    void* x = randomBytes(xBytes, 1);
    void* w = randomBytes(l.k * l.r * l.r * l.c, 2);
    void* z = l.residual ? randomBytes(yBytes, 3) : nullptr;
    void* y = nullptr;
    PROBE_CHECK(cudaMalloc(&y, yBytes));
    std::vector<float> ones(static_cast<size_t>(l.k), 0.01f);
    float *alpha = nullptr, *bias = nullptr;
    PROBE_CHECK(cudaMalloc(&alpha, l.k * sizeof(float)));
    PROBE_CHECK(cudaMalloc(&bias, l.k * sizeof(float)));
    PROBE_CHECK(cudaMemcpy(alpha, ones.data(), l.k * sizeof(float), cudaMemcpyHostToDevice));
    PROBE_CHECK(cudaMemcpy(bias, ones.data(), l.k * sizeof(float), cudaMemcpyHostToDevice));
    const double bytes = static_cast<double>(xRead + yBytes * (l.residual ? 2 : 1));
    const float streamMs = medianMs([&] {
      streamKernel<<<prop.multiProcessorCount * 8, 256>>>(static_cast<const int4*>(x), xRead / 16,
                                                          static_cast<const int4*>(z),
                                                          static_cast<int4*>(y), yBytes / 16, sink);
    });
    std::printf("%-26s %9.4f %8.2f ", l.name, streamMs, bytes / streamMs / 1e9);
    for (int tile : int8ConvMmaTiles(s)) {
      if (!onlyTile.empty() && onlyTile != int8ConvMmaTileName(tile)) continue;
      Status last = Status::ok();
      const float ms = medianMs(
          [&] { last = runInt8ConvMma(tile, s, x, w, alpha, bias, 0.5f, z, y, true, nullptr); });
      if (!last.isOk()) {
        std::printf(" %s failed: %s", int8ConvMmaTileName(tile).c_str(), last.toString().c_str());
        continue;
      }
      std::printf(" %s %.4f (%.2f)", int8ConvMmaTileName(tile).c_str(), ms, bytes / ms / 1e9);
    }
    std::printf("\n");
    PROBE_CHECK(cudaFree(x));
    PROBE_CHECK(cudaFree(w));
    if (z) PROBE_CHECK(cudaFree(z));
    PROBE_CHECK(cudaFree(y));
    PROBE_CHECK(cudaFree(alpha));
    PROBE_CHECK(cudaFree(bias));
  }
  PROBE_CHECK(cudaDeviceSynchronize());
  return 0;
}
