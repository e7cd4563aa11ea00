// ai.kiln Fp8MatMul on the GPU (contract: ir/fp8_layers.h; kernels: fp8_matmul.cu):
// one cuBLASLt FP8 GEMM with CUBLAS_COMPUTE_32F, A and B CUDA_R_8F_E4M3 in the "TN"
// layout cuBLASLt's FP8 kernels require (A transposed, B not), the per-tensor scales
// as device float scalars behind CUBLASLT_MATMUL_DESC_A_SCALE_POINTER (w_scale) and
// B_SCALE_POINTER (x_scale), D in the engine's float storage. In row-major terms
// Y[rows, N] = X[rows, K] W[K, N]; column-major, D^T (N x rows) = op_T(Wt) * X^T with
// Wt = W^T stored [Np, Kp] (uploaded once) and X as [rows, Kp]. FP8 operands need
// 16-byte leading dimensions, so K is zero-padded to Kp = a multiple of 16 (X is
// packed, quantizing a float X, unless it already is E4M3 of that width); zeros add
// nothing to the sums. Plans, tried in order:
//   direct: D is Y. With a 16-bit D, bias and relu ride cuBLASLt's epilogue (bias in
//     D's type, as its FP8 table wants); with a float32 D, Kiln's epilogue adds them in
//     place (cuBLASLt's FP8 bias for a float32 D is bfloat16, which would round it).
//   padded: D float32 [rows, Np] (N padded to 16) in scratch, then Kiln's epilogue
//     writes Y: float storage, or E4M3 for an FP8 output (always this plan);
//   padded rows: the same with the rows padded to 16 too (zero rows of X).
// Without an algorithm for either the node moves to the host fallback, as it does on
// devices below compute capability 8.9, where FP8 tensor cores do not exist.
#include <cublasLt.h>

#include <algorithm>
#include <cstring>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/engine_impl.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/fp8_matmul.h"
#include "backends/cuda/ops/gemm.h"
#include "ir/fp8_layers.h"
#include "kiln/passes.h"

namespace kiln::cuda {
namespace {

constexpr int64_t kFp8Align = 16;  // elements (= bytes) of an FP8 leading dimension

int64_t roundUp(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

bool aligned256(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 256 == 0;
}

bool isFloatStorage(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat16 || t == DataType::kBFloat16;
}

cudaDataType_t cudaTypeOf(DataType t) {
  return t == DataType::kFloat16 ? CUDA_R_16F : t == DataType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

// The current device's compute capability as 10 * major + minor, or -1.
int currentComputeCapability() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return major * 10 + minor;
}

// FP8 tensor cores (Ada, Hopper and later); X E4M3 or float storage, W E4M3.
std::string supportsFp8MatMul(const Node&, const std::vector<DataType>& types) {
  const int cc = currentComputeCapability();
  if (cc < 89)
    return "FP8 GEMMs need compute capability 8.9 or newer" +
           (cc < 0 ? std::string()
                   : " (this device is " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                         ")");
  const DataType x = types.empty() ? DataType::kUndefined : types[0];
  if (!isFp8Type(x) && !isFloatStorage(x))
    return std::string("no GPU FP8 layer for ") + dataTypeName(x) + " input";
  if (types.size() > 1 && !isFp8Type(types[1])) return "weights are not float8e4m3fn";
  return "";
}

// Descriptors and the heuristic's algorithm for one plan.
struct LtFp8Gemm : LtMatmulDescriptors {
  int64_t rows = 0, m = 0, k = 0;  // m: D's columns (N, or Np when padded)
  int64_t n = 0;                   // rows in the layouts: rows, or rows padded to 16
  bool direct = false;             // D is Y
  bool ltEpilogue = false;         // bias/relu in cuBLASLt's epilogue
  DataType dType = DataType::kFloat32;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// What a layer keeps on the device across enqueues (cleared when shapes change).
struct Fp8LayerState {
  DeviceBuffer weights;    // E4M3 [colsPadded, kPadded], zero-padded
  DeviceBuffer wScale;     // float: w_scale (cuBLASLt's A scale)
  DeviceBuffer xScale;     // float: x_scale (B scale)
  DeviceBuffer bias;       // float32 [cols] (Kiln's epilogue)
  DeviceBuffer biasTyped;  // [cols] in a 16-bit D's type (cuBLASLt's epilogue)
  DataType biasTypedType = DataType::kUndefined;
  int64_t depth = 0, kPadded = 0, cols = 0, colsPadded = 0;
  float xScaleValue = 1.f, yScale = 1.f;
  bool hasBias = false, fp8Output = false, relu = false;
  std::unique_ptr<LtFp8Gemm> gemm;
};

Status upload(DeviceBuffer* buffer, const void* host, size_t bytes, const std::string& what) {
  KILN_RETURN_IF_ERROR(buffer->allocate(static_cast<int64_t>(bytes), what));
  // Once per context, at the first enqueue: a synchronous copy keeps `host` simple.
  if (bytes > 0) KILN_CUDA_CHECK(cudaMemcpy(buffer->data(), host, bytes, cudaMemcpyHostToDevice));
  return Status::ok();
}

Result<float> scaleInput(GpuKernelContext& ctx, size_t slot, const char* name) {
  KILN_ASSIGN_OR_RETURN(Tensor t, ctx.hostInput(slot));
  if (t.type() != DataType::kFloat32 || t.numel() != 1 || !(t.data<float>()[0] > 0))
    return ctx.error(std::string(name) + " must be one positive float32 value");
  return t.data<float>()[0];
}

// W^T zero-padded to [colsPadded, kPadded] E4M3 rows, the scales and the bias.
Status prepareState(GpuKernelContext& ctx, const Tensor& w, Fp8LayerState* s) {
  s->depth = w.dim(0);
  s->cols = w.dim(1);
  s->kPadded = roundUp(std::max<int64_t>(s->depth, 1), kFp8Align);
  s->colsPadded = roundUp(std::max<int64_t>(s->cols, 1), kFp8Align);
  std::vector<uint8_t> rows(static_cast<size_t>(s->colsPadded * s->kPadded), 0);
  for (int64_t k = 0; k < s->depth; ++k)
    for (int64_t c = 0; c < s->cols; ++c)
      rows[c * s->kPadded + k] = w.data<uint8_t>()[k * s->cols + c];
  KILN_RETURN_IF_ERROR(upload(&s->weights, rows.data(), rows.size(), "fp8 weights"));
  KILN_ASSIGN_OR_RETURN(const float wScale, scaleInput(ctx, kFp8WScale, "w_scale"));
  KILN_ASSIGN_OR_RETURN(s->xScaleValue, scaleInput(ctx, kFp8XScale, "x_scale"));
  KILN_RETURN_IF_ERROR(upload(&s->wScale, &wScale, sizeof(float), "fp8 w_scale"));
  KILN_RETURN_IF_ERROR(upload(&s->xScale, &s->xScaleValue, sizeof(float), "fp8 x_scale"));
  s->fp8Output = ctx.hasInput(kFp8YScale);
  if (s->fp8Output) {
    KILN_ASSIGN_OR_RETURN(s->yScale, scaleInput(ctx, kFp8YScale, "y_scale"));
  }
  const std::string act = ctx.node().attrString("activation", "none");
  if (act != "none" && act != "relu") return ctx.error("unknown activation '" + act + "'");
  s->relu = act == "relu";
  s->hasBias = ctx.hasInput(kFp8Bias);
  if (!s->hasBias) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kFp8Bias));
  if (b.type() != DataType::kFloat32 || b.numel() != s->cols)
    return ctx.error("input 2 (B) must be float32 with one value per output column");
  return upload(&s->bias, b.rawData(), b.byteSize(), "fp8 bias");
}

// The bias in a 16-bit D's type, for cuBLASLt's epilogue (converted once).
Status typedBias(GpuKernelContext& ctx, Fp8LayerState& s, DataType type) {
  if (s.biasTypedType == type) return Status::ok();
  KILN_ASSIGN_OR_RETURN(Tensor b, ctx.hostInput(kFp8Bias));
  const Tensor converted = castTensor(b, type);
  KILN_RETURN_IF_ERROR(
      upload(&s.biasTyped, converted.rawData(), converted.byteSize(), "fp8 bias (typed)"));
  s.biasTypedType = type;
  return Status::ok();
}

Status setAttribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute,
                    const void* value, size_t bytes) {
  KILN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, attribute, value, bytes));
  return Status::ok();
}

// TN FP8 descriptors with the scale pointers and, when cuBLASLt applies them, bias/relu.
Status describeGemm(const Fp8LayerState& s, LtFp8Gemm* g) {
  KILN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  KILN_RETURN_IF_ERROR(
      setAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof(transposed)));
  KILN_RETURN_IF_ERROR(setAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof(plain)));
  const void* aScale = s.wScale.data();
  const void* bScale = s.xScale.data();
  KILN_RETURN_IF_ERROR(
      setAttribute(g->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &aScale, sizeof(aScale)));
  KILN_RETURN_IF_ERROR(
      setAttribute(g->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bScale, sizeof(bScale)));
  if (g->ltEpilogue) {
    const cublasLtEpilogue_t epilogue =
        s.hasBias ? (s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                  : CUBLASLT_EPILOGUE_RELU;
    KILN_RETURN_IF_ERROR(
        setAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    if (s.hasBias) {
      const cudaDataType_t biasType = cudaTypeOf(g->dType);
      const void* bias = s.biasTyped.data();
      KILN_RETURN_IF_ERROR(
          setAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType)));
      KILN_RETURN_IF_ERROR(
          setAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
  }
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_8F_E4M3, g->k, g->m, g->k));
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_8F_E4M3, g->k, g->n, g->k));
  KILN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->d, cudaTypeOf(g->dType), g->m, g->n, g->m));
  return Status::ok();
}

// The heuristic's first algorithm; false (with `why`) when it has none.
Result<bool> findAlgorithm(GpuKernelContext& ctx, LtFp8Gemm* g, std::string* why) {
  KILN_ASSIGN_OR_RETURN(const LtAlgorithm result, firstLtAlgorithm(ctx, g->op, g->a, g->b, g->d));
  const cublasStatus_t status = result.status;
  if (!result.found) {
    *why += std::string(why->empty() ? "" : "; ") +
            (g->direct        ? "direct"
             : g->n > g->rows ? "padded rows"
                              : "padded") +
            " D " + dataTypeName(g->dType) + ": " +
            (status != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(status) : "no algorithm");
    return false;
  }
  g->algo = result.algo;
  g->workspace = result.workspace;
  return true;
}

std::string describePlan(const LtFp8Gemm& g) {
  return "cublasLt fp8 e4m3 TN GEMM (fp32 accumulate, A/B scale pointers, D " +
         std::string(dataTypeName(g.dType)) +
         (g.direct       ? (g.ltEpilogue ? ", cublasLt bias/relu epilogue" : "")
          : g.n > g.rows ? ", N and rows padded to 16"
                         : ", N padded to 16") +
         (g.ltEpilogue ? "" : ", kiln epilogue") + ")";
}

// The direct plan when Y can be D, else (or when cuBLASLt has none) the padded ones.
Status planGemm(GpuKernelContext& ctx, Fp8LayerState& s, int64_t rows, const DeviceTensor& y) {
  std::string why;
  const bool tryDirect = !s.fp8Output && aligned256(y.data);
  for (const int plan : {0, 1, 2}) {  // direct, padded, padded rows
    const bool direct = plan == 0;
    if ((direct && !tryDirect) || (plan == 2 && rows % kFp8Align == 0)) continue;
    auto g = std::make_unique<LtFp8Gemm>();
    g->rows = rows;
    g->n = plan == 2 ? roundUp(rows, kFp8Align) : rows;
    g->k = s.kPadded;
    g->direct = direct;
    g->m = direct ? s.cols : s.colsPadded;
    g->dType = direct ? y.type : DataType::kFloat32;
    g->ltEpilogue = direct && g->dType != DataType::kFloat32 && (s.hasBias || s.relu);
    if (g->ltEpilogue && s.hasBias) KILN_RETURN_IF_ERROR(typedBias(ctx, s, g->dType));
    Status described = describeGemm(s, g.get());
    if (!described.isOk()) {
      why += (why.empty() ? "" : "; ") + described.message();
      continue;
    }
    KILN_ASSIGN_OR_RETURN(const bool found, findAlgorithm(ctx, g.get(), &why));
    if (!found) continue;
    ctx.setImplementation(describePlan(*g));
    s.gemm = std::move(g);
    return Status::ok();
  }
  return ctx.unsupported("cuBLASLt has no FP8 algorithm for " + std::to_string(rows) + "x" +
                         std::to_string(s.cols) + "x" + std::to_string(s.depth) + " (" + why + ")");
}

Result<Fp8LayerState*> layerState(GpuKernelContext& ctx) {
  auto state = std::static_pointer_cast<Fp8LayerState>(ctx.layerState());
  if (!state) {
    state = std::make_shared<Fp8LayerState>();
    KILN_ASSIGN_OR_RETURN(Tensor w, ctx.hostInput(kFp8W));
    if (!isFp8Type(w.type()) || w.rank() != 2)
      return ctx.error("input 1 (W) must be a float8e4m3fn [K, N] matrix");
    KILN_RETURN_IF_ERROR(prepareState(ctx, w, state.get()));
    ctx.layerState() = state;
  }
  return state.get();
}

Status fp8MatMulKernel(GpuKernelContext& ctx) {
  const DeviceTensor& x = ctx.input(kFp8X);
  const DeviceTensor& w = ctx.input(kFp8W);
  if (w.rank() != 2 || x.rank() < 1 || x.shape.back() != w.shape[0])
    return ctx.error("X " + shapeToString(x.shape) + " and W " + shapeToString(w.shape) +
                     " do not multiply");
  KILN_ASSIGN_OR_RETURN(Fp8LayerState * s, layerState(ctx));
  if (s->depth == 0) return ctx.unsupported("FP8 GEMM with an empty reduction dim");
  Shape yShape = x.shape;
  yShape.back() = s->cols;
  KILN_ASSIGN_OR_RETURN(
      DeviceTensor y,
      ctx.allocateOutput(0, s->fp8Output ? DataType::kFp8E4M3 : ctx.floatType(), yShape));
  const int64_t rows = x.numel() / s->depth;
  if (rows == 0 || s->cols == 0) return Status::ok();
  if (!s->gemm || s->gemm->rows != rows || (s->gemm->direct && !aligned256(y.data)))
    KILN_RETURN_IF_ERROR(planGemm(ctx, *s, rows, y));
  const LtFp8Gemm& g = *s->gemm;
  // Scratch: X packed [n, Kp] unless X is E4M3 of that width already; the padded D.
  const bool packX =
      !isFp8Type(x.type) || s->depth != s->kPadded || !aligned256(x.data) || g.n != rows;
  const size_t aBytes = packX ? static_cast<size_t>(roundUp(g.n * s->kPadded, 256)) : 0;
  const size_t dBytes = g.direct ? 0 : static_cast<size_t>(g.n * g.m) * sizeof(float);
  void* scratch = nullptr;
  if (aBytes + dBytes > 0) {
    KILN_ASSIGN_OR_RETURN(scratch, ctx.workspace(aBytes + dBytes));
  }
  const void* a = x.data;
  if (packX) {
    auto* packed = static_cast<uint8_t*>(scratch);
    KILN_RETURN_IF_ERROR(packFp8Input(x.data, x.type, s->xScaleValue, rows, s->depth, s->kPadded,
                                      packed, ctx.stream()));
    if (g.n > rows) {  // zero rows: their sums land in D rows nobody reads
      KILN_CUDA_CHECK(cudaMemsetAsync(packed + rows * s->kPadded, 0,
                                      static_cast<size_t>((g.n - rows) * s->kPadded),
                                      ctx.stream()));
    }
    a = packed;
  }
  void* d = g.direct ? y.data : static_cast<char*>(scratch) + aBytes;
  void* workspace = nullptr;
  if (g.workspace > 0) {
    KILN_ASSIGN_OR_RETURN(workspace, ctx.libraryWorkspace(g.workspace));
  }
  KILN_ASSIGN_OR_RETURN(cublasLtHandle_t handle, ctx.libraries().cublasLt());
  const float one = 1.f, zero = 0.f;
  KILN_CUBLAS_CHECK(cublasLtMatmul(handle, g.op, &one, s->weights.data(), g.a, a, g.b, &zero, d,
                                   g.d, d, g.d, &g.algo, workspace, g.workspace, ctx.stream()));
  if (g.direct && (g.ltEpilogue || (!s->hasBias && !s->relu))) return Status::ok();
  Fp8Epilogue e;
  e.d = d;
  e.dType = g.dType;
  e.dStride = g.m;
  e.y = y.data;
  e.yType = y.type;
  e.bias = s->hasBias ? static_cast<const float*>(s->bias.data()) : nullptr;
  e.relu = s->relu;
  e.yScale = s->yScale;
  e.rows = rows;
  e.cols = s->cols;
  return applyFp8Epilogue(e, ctx.stream());
}

}  // namespace

void registerFp8GpuKernels(GpuKernelRegistry& registry) {
  GpuKernelEntry entry;
  entry.domain = kKilnDomain;
  entry.opType = kFp8MatMulOp;
  entry.fn = &fp8MatMulKernel;
  entry.supports = &supportsFp8MatMul;
  registry.add(std::move(entry));
}

}  // namespace kiln::cuda
