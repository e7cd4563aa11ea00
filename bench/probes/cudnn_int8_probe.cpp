// Probe (issue 8, not a test): does cuDNN 9 on this device run INT8 convolutions
// channels-last with the epilogue an INT8 ResNet-50 needs, and how fast against the
// FP16 fused graph Kiln uses today? For ResNet-50 layer shapes at batch 256 it
// builds, per variant, the backend graph
//   conv(X, W; compute) -> [* scale[k]] -> + bias[k] -> ReLU -> Y
// asks the heuristics (mode A, then fallback) for engines, times each that
// finalizes (best of 3 after a warm-up, random non-zero data) and prints a table:
//   fp16       X, W, Y half NHWC/KRSC, compute float (today's FusedConv)
//   int8>int8  X, W int8 NHWC/KRSC, compute int32, conv output virtual float, Y int8
//   int8>half  the same with a half Y
//   int8 conv  X, W int8, compute int32, Y float (no epilogue)
//   fp16>int8  X, W half, compute float, * scale[k] + bias, ReLU, Y int8: can the FP16
//              stem write its output quantized (issue 8: the stem's 411 MB of FP16
//              output, then MaxPool and a standalone QuantizeLinear, ~0.75 ms)?
// The last row is ResNet-50's stem (7x7 stride 2, C padded 3 -> 4 as Kiln's FusedConv
// does).
// Usage: kiln_cudnn_int8_probe [batch]
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/ops/cudnn_conv.h"

using namespace kiln;
using namespace kiln::cuda;

namespace {

struct Shape4 {
  const char* name;
  int64_t n, c, h, w, k, r, stride, pad;
  int64_t oh() const { return (h + 2 * pad - r) / stride + 1; }
};

enum : int64_t { kX = 1, kW, kY, kScale, kBias, kV0 = 10 };

Status tensor(CudnnDescriptor* d, cudnnDataType_t type, std::vector<int64_t> dims, int64_t uid,
              bool isVirtual, bool channelsLast) {
  return makeCudnnTensor(d, type, dims, uid, isVirtual, channelsLast);
}

Status convOp(const Shape4& s, cudnnDataType_t compute, cudnnBackendDescriptor_t x,
              cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y, CudnnDescriptor* op) {
  CudnnDescriptor conv;
  KILN_RETURN_IF_ERROR(conv.create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  int64_t spatial = 2;
  std::vector<int64_t> pads = {s.pad, s.pad}, strides = {s.stride, s.stride}, dil = {1, 1};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                 &mode);
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads.data());
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
                 pads.data());
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil.data());
  KILN_CUDNN_SET(conv.get(), CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
                 strides.data());
  KILN_CUDNN_CHECK(cudnnBackendFinalize(conv.get()));
  cudnnBackendDescriptor_t cd = conv.get();
  constexpr auto kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  KILN_RETURN_IF_ERROR(op->create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, kDesc, 1, &x);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, kDesc, 1, &w);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, kDesc, 1, &y);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, kDesc, 1, &cd);
  float alpha = 1, beta = 0;
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                 &alpha);
  KILN_CUDNN_SET(op->get(), CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
                 &beta);
  KILN_CUDNN_CHECK(cudnnBackendFinalize(op->get()));
  return Status::ok();
}

struct Variant {
  const char* name;
  cudnnDataType_t io, out, compute, convOut;
  bool epilogue, scale;
};

struct Buffers {
  void *x, *w, *y, *scale, *bias, *workspace;
};

// The best time over the engines of `v` on `s`, or a negative number; prints each engine.
float probe(cudnnHandle_t handle, cudaStream_t stream, const Shape4& s, const Variant& v,
            const Buffers& b) {
  const int64_t oh = s.oh();
  CudnnDescriptor x, w, y, scale, bias;
  std::vector<int64_t> ch = {1, s.k, 1, 1};
  auto fail = [&](const Status& st) {
    std::printf("  %-10s %-22s %s\n", v.name, s.name, st.message().c_str());
    return -1.f;
  };
  Status st = tensor(&x, v.io, {s.n, s.c, s.h, s.w}, kX, false, true);
  if (st.isOk()) st = tensor(&w, v.io, {s.k, s.c, s.r, s.r}, kW, false, true);
  if (st.isOk()) st = tensor(&y, v.out, {s.n, s.k, oh, oh}, kY, false, true);
  if (st.isOk()) st = tensor(&scale, CUDNN_DATA_FLOAT, ch, kScale, false, true);
  if (st.isOk())
    st = tensor(&bias, v.io == CUDNN_DATA_HALF ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, ch, kBias,
                false, true);
  if (!st.isOk()) return fail(st);
  std::vector<CudnnDescriptor> mids(3), ops;
  for (int i = 0; i < 3 && st.isOk(); ++i)
    st = tensor(&mids[i], CUDNN_DATA_FLOAT, {s.n, s.k, oh, oh}, kV0 + i, true, true);
  CudnnDescriptor conv0;
  if (st.isOk()) st = tensor(&conv0, v.convOut, {s.n, s.k, oh, oh}, kV0 + 5, true, true);
  if (!st.isOk()) return fail(st);
  ops.resize(4);
  int count = 0;
  cudnnBackendDescriptor_t last = v.epilogue ? conv0.get() : y.get();
  st = convOp(s, v.compute, x.get(), w.get(), last, &ops[count++]);
  if (st.isOk() && v.epilogue) {
    cudnnBackendDescriptor_t cur = conv0.get();
    if (v.scale) {
      st = makePointwiseOp(CUDNN_POINTWISE_MUL, cur, scale.get(), mids[0].get(), &ops[count++]);
      cur = mids[0].get();
    }
    if (st.isOk())
      st = makePointwiseOp(CUDNN_POINTWISE_ADD, cur, bias.get(), mids[1].get(), &ops[count++]);
    if (st.isOk())
      st =
          makePointwiseOp(CUDNN_POINTWISE_RELU_FWD, mids[1].get(), nullptr, y.get(), &ops[count++]);
  }
  if (!st.isOk()) return fail(st);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < count; ++i) raw.push_back(ops[i].get());
  CudnnDescriptor graph;
  st = makeOperationGraph(handle, raw, &graph);
  if (!st.isOk()) return fail(st);
  PlanFilter filter;
  filter.wanted = 6;
  filter.workspaceLimit = int64_t(1) << 30;
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  std::vector<std::string> rejected;
  st = heuristicPlans(handle, graph.get(), filter, &plans, &rejected);
  if (!st.isOk()) return fail(st);
  if (plans.empty())
    return fail(Status(StatusCode::kUnsupported,
                       "no engine" + (rejected.empty() ? "" : " (" + rejected.front() + ")")));
  float best = -1;
  for (auto& plan : plans) {
    CudnnBindings bind = {{kX, b.x}, {kW, b.w}, {kY, b.y}};
    if (v.epilogue && v.scale) bind.push_back({kScale, b.scale});
    if (v.epilogue) bind.push_back({kBias, b.bias});
    Result<float> ms =
        timeOnStream(stream, [&] { return executeCudnnPlan(handle, *plan, bind, b.workspace); });
    std::printf(
        "  %-10s %-22s %-28s %s\n", v.name, s.name, plan->description.c_str(),
        ms.isOk() ? (std::to_string(ms.value()) + " ms").c_str() : ms.status().message().c_str());
    if (ms.isOk() && (best < 0 || ms.value() < best)) best = ms.value();
  }
  return best;
}

void* randomDevice(size_t bytes, uint32_t seed) {
  std::vector<unsigned char> host(bytes);
  std::mt19937 rng(seed);
  // Small magnitudes in every byte: int8 in [-8, 8), halves/floats of modest size.
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>((rng() % 16) - 8) & 0x3f;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
  cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 256;
  const Shape4 shapes[] = {{"3x3 64->64 56x56", n, 64, 56, 56, 64, 3, 1, 1},
                           {"1x1 256->64 56x56", n, 256, 56, 56, 64, 1, 1, 0},
                           {"1x1 64->256 56x56", n, 64, 56, 56, 256, 1, 1, 0},
                           {"3x3 128->128 28x28", n, 128, 28, 28, 128, 3, 1, 1},
                           {"3x3 256->256 14x14", n, 256, 14, 14, 256, 3, 1, 1},
                           {"1x1 1024->256 14x14", n, 1024, 14, 14, 256, 1, 1, 0},
                           {"3x3 512->512 7x7", n, 512, 7, 7, 512, 3, 1, 1},
                           {"7x7/2 4->64 224 (stem)", n, 4, 224, 224, 64, 7, 2, 3}};
  const Variant variants[] = {
      {"fp16", CUDNN_DATA_HALF, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, true, false},
      {"int8>int8", CUDNN_DATA_INT8, CUDNN_DATA_INT8, CUDNN_DATA_INT32, CUDNN_DATA_FLOAT, true,
       true},
      {"int8>int8i", CUDNN_DATA_INT8, CUDNN_DATA_INT8, CUDNN_DATA_INT32, CUDNN_DATA_INT32, true,
       true},
      {"int8>half", CUDNN_DATA_INT8, CUDNN_DATA_HALF, CUDNN_DATA_INT32, CUDNN_DATA_FLOAT, true,
       true},
      {"int8 conv", CUDNN_DATA_INT8, CUDNN_DATA_FLOAT, CUDNN_DATA_INT32, CUDNN_DATA_FLOAT, false,
       false},
      {"int8 convi", CUDNN_DATA_INT8, CUDNN_DATA_INT32, CUDNN_DATA_INT32, CUDNN_DATA_INT32, false,
       false},
      {"fp16>int8", CUDNN_DATA_HALF, CUDNN_DATA_INT8, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, true,
       true}};
  cudnnHandle_t handle;
  cudaStream_t stream;
  if (cudaStreamCreate(&stream) != cudaSuccess || cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::printf("no CUDA device or cuDNN\n");
    return 1;
  }
  cudnnSetStream(handle, stream);
  std::printf("cuDNN %zu, batch %lld\n", cudnnGetVersion(), static_cast<long long>(n));
  const size_t big = size_t(n) * 256 * 56 * 56 * 4;
  Buffers b{randomDevice(big, 1),  randomDevice(size_t(1024) * 512 * 9 * 2, 2),
            randomDevice(big, 3),  randomDevice(4096, 4),
            randomDevice(4096, 5), nullptr};
  cudaMalloc(&b.workspace, size_t(1) << 30);
  if (!b.x || !b.w || !b.y || !b.workspace) {
    std::printf("out of memory\n");
    return 1;
  }
  std::printf("\n%-22s %10s %10s %10s %10s\n", "layer", "fp16 ms", "int8>int8", "int8>half",
              "speed-up");
  std::vector<std::vector<float>> table;
  for (const Shape4& s : shapes) {
    std::vector<float> row;
    for (const Variant& v : variants) row.push_back(probe(handle, stream, s, v, b));
    table.push_back(row);
  }
  std::printf("\n%-22s %10s %10s %10s %10s %10s %10s\n", "layer", "fp16", "int8>int8", "int8>int8i",
              "int8>half", "best x", "fp16>int8");
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& r = table[i];
    float bestInt8 = -1;
    for (int j = 1; j <= 3; ++j)
      if (r[j] > 0 && (bestInt8 < 0 || r[j] < bestInt8)) bestInt8 = r[j];
    std::printf("%-22s %10.4f %10.4f %10.4f %10.4f %10.2f %10.4f\n", shapes[i].name, r[0], r[1],
                r[2], r[3], bestInt8 > 0 && r[0] > 0 ? r[0] / bestInt8 : 0.f, r[6]);
  }
  return 0;
}
