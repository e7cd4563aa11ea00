// patch_conv_as_matmul: a vision transformer's patch embedding, a convolution whose
// stride equals its kernel read into tokens, becomes the GEMM it is:
//   Transpose(Reshape(Conv(X, W, b), [N, O, Hp*Wp]), (0, 2, 1))
//     = Reshape(MatMul(Reshape(Transpose(Reshape(X, [N, C, Hp, kh, Wp, kw]),
//                                        (0, 2, 4, 1, 3, 5)), [N*Hp*Wp, C*kh*kw]),
//                      W'^T) + b, [N, Hp*Wp, O])
// with W' = W as [O, C*kh*kw]: the patches do not overlap, so each output token is one
// dot product of a patch (its C x kh x kw values in W's order) with each filter. The
// copy of X into patch rows is one strided pass over the image; the convolution it
// replaces ran as an implicit GEMM on a 3- or 4-channel input (channels padded to 4,
// NHWC reformats before and after it, then the model's own transpose into tokens:
// ViT-B/16, DeiT, CLIP). fuse_matmul_bias_activation then gives the GEMM its bias.
// Conditions: W a float32 constant [O, C, kh, kw] with kh * kw > 1, b (if any) a
// float32 constant [O]; group 1, dilations 1, strides (kh, kw), no padding (pads 0,
// auto_pad NOTSET or VALID); X [N, C, H, W] with C, H, W known, H % kh = W % kw = 0;
// the Conv's output read by a Reshape alone, whose output [N, O, Hp*Wp] (O and Hp*Wp
// known) is read by a Transpose (0, 2, 1) alone. The transposed tokens keep their name.
// When X is a channels-first view of channels-last data S (X = Transpose(S, (0, 3, 1, 2))
// of S [N, H, W, C], or X = Reshape(Transpose(S, (0, 2, 1)), [N, C, H, W]) of tokens S
// [N, H*W, C]: SegFormer's spatial reduction, PVT), the patch rows read S in (kh, kw, C)
// order instead, with W's columns in that order: Reshape(S, [N, Hp, kh, Wp, kw, C]),
// Transpose (0, 1, 3, 2, 4, 5), which moves runs of kw * C values, and X's own Transpose
// is left to whoever else reads it.
#include <algorithm>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "patch_conv_as_matmul";

struct PatchConv {
  int conv = -1, reshape = -1, transpose = -1;
  int64_t channels = 0, kh = 0, kw = 0, rows = 0, cols = 0, filters = 0;  // rows = Hp, cols = Wp
  std::string channelsLast;  // S, X's elements in [N, H, W, C] order; empty: read X
};

bool allEqual(const std::vector<int64_t>& values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

// The Conv's attributes make it a non-overlapping patch embedding of a kh x kw kernel.
bool patchAttributes(const Node& conv, int64_t kh, int64_t kw) {
  const std::string autoPad = conv.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") return false;
  if (conv.attrInt("group", 1) != 1) return false;
  const std::vector<int64_t> dilations = conv.attrInts("dilations");
  if (!dilations.empty() && !allEqual(dilations, 1)) return false;
  const std::vector<int64_t> pads = conv.attrInts("pads");
  if (!pads.empty() && !allEqual(pads, 0)) return false;
  const std::vector<int64_t> kernel = conv.attrInts("kernel_shape");
  if (!kernel.empty() && kernel != std::vector<int64_t>{kh, kw}) return false;
  return conv.attrInts("strides") == std::vector<int64_t>{kh, kw};
}

// W [O, C, kh, kw] as [O, kh, kw, C].
Tensor channelsLastFilters(const Tensor& w) {
  const int64_t filters = w.dim(0), channels = w.dim(1), taps = w.dim(2) * w.dim(3);
  Tensor out(w.type(), {filters, w.dim(2), w.dim(3), channels});
  const auto* src = static_cast<const float*>(w.rawData());
  auto* dst = static_cast<float*>(out.rawData());
  for (int64_t o = 0; o < filters; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t t = 0; t < taps; ++t)
        dst[(o * taps + t) * channels + c] = src[(o * channels + c) * taps + t];
  return out;
}

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, PatchConv* m) {
  const Node& conv = g.nodes[at];
  if (!isDefaultDomain(conv) || conv.opType != "Conv" || conv.inputs.size() < 2 ||
      conv.inputs.size() > 3 || conv.outputs.size() != 1)
    return false;
  const Tensor* w = float32Constant(index, conv.inputs[1], -1);
  if (!w || w->rank() != 4 || w->dim(2) * w->dim(3) < 2) return false;
  m->filters = w->dim(0);
  m->channels = w->dim(1);
  m->kh = w->dim(2);
  m->kw = w->dim(3);
  if (!patchAttributes(conv, m->kh, m->kw)) return false;
  if (conv.hasInput(2) && !float32Constant(index, conv.inputs[2], m->filters)) return false;
  const SymbolicShape* x = shapeOf(shapes, conv.inputs[0]);
  if (!x || x->size() != 4 || typeOf(shapes, conv.inputs[0]) != DataType::kFloat32) return false;
  for (int d = 1; d < 4; ++d)
    if (!(*x)[d].isConst()) return false;
  const int64_t height = (*x)[2].constValue(), width = (*x)[3].constValue();
  if ((*x)[1].constValue() != m->channels || height % m->kh != 0 || width % m->kw != 0)
    return false;
  m->rows = height / m->kh;
  m->cols = width / m->kw;
  m->channelsLast = channelsLastSourceOf(g, index, shapes, conv.inputs[0]);
  m->conv = at;
  m->reshape = index.soleReader(conv.outputs[0]);
  if (m->reshape < 0 || !isOnnxOp(g.nodes[m->reshape], "Reshape", 2) ||
      g.nodes[m->reshape].inputs[0] != conv.outputs[0])
    return false;
  const std::string& flat = g.nodes[m->reshape].outputs[0];
  const SymbolicShape* y = shapeOf(shapes, flat);
  if (!y || y->size() != 3 || !(*y)[1].isConst() || !(*y)[2].isConst() ||
      (*y)[1].constValue() != m->filters || (*y)[2].constValue() != m->rows * m->cols)
    return false;
  m->transpose = index.soleReader(flat);
  if (m->transpose < 0 || !isOnnxOp(g.nodes[m->transpose], "Transpose", 1)) return false;
  return g.nodes[m->transpose].attrInts("perm") == std::vector<int64_t>{0, 2, 1};
}

// The rewrite's nodes in order: patches, GEMM (+ bias), tokens.
std::vector<Node> patchGemm(Graph& g, const GraphIndex& index, const PatchConv& m) {
  const Node& conv = g.nodes[m.conv];
  const std::string base = conv.displayName();
  const std::vector<std::string> convSource = sourceNodesOf(g, {m.conv});
  const std::vector<std::string> tokensSource = sourceNodesOf(g, {m.reshape, m.transpose});
  const int64_t patch = m.channels * m.kh * m.kw;
  auto node = [&](const char* op, const std::string& suffix, std::vector<std::string> inputs,
                  const std::vector<std::string>& source) {
    return madeNode(g, conv, base + suffix, op, std::move(inputs), source, kName);
  };
  std::vector<Node> out;
  const bool channelsLast = !m.channelsLast.empty();
  const std::string split = addInt64Initializer(
      g, base + "_patch_grid",
      channelsLast ? std::vector<int64_t>{-1, m.rows, m.kh, m.cols, m.kw, m.channels}
                   : std::vector<int64_t>{-1, m.channels, m.rows, m.kh, m.cols, m.kw});
  out.push_back(node("Reshape", " (patch grid)",
                     {channelsLast ? m.channelsLast : conv.inputs[0], split}, convSource));
  out.push_back(node("Transpose", " (patches)", {out.back().outputs[0]}, convSource));
  out.back().attributes["perm"] =
      intsAttribute(channelsLast ? std::vector<int64_t>{0, 1, 3, 2, 4, 5}
                                 : std::vector<int64_t>{0, 2, 4, 1, 3, 5});
  const std::string rows = addInt64Initializer(g, base + "_patch_rows", {-1, patch});
  out.push_back(node("Reshape", " (patch rows)", {out.back().outputs[0], rows}, convSource));
  const std::string weights = freshName(g, conv.inputs[1] + "_as_matmul");
  const Tensor& filters = *index.constant(conv.inputs[1]);
  g.initializers[weights] = transposedMatrix(
      (channelsLast ? channelsLastFilters(filters) : filters).reshaped({m.filters, patch}));
  out.push_back(node("MatMul", " (as MatMul)", {out.back().outputs[0], weights}, convSource));
  if (conv.hasInput(2))
    out.push_back(node("Add", " (bias)", {out.back().outputs[0], conv.inputs[2]}, convSource));
  const std::string tokens =
      addInt64Initializer(g, base + "_tokens", {-1, m.rows * m.cols, m.filters});
  out.push_back(node("Reshape", " (tokens)", {out.back().outputs[0], tokens}, tokensSource));
  out.back().outputs[0] = g.nodes[m.transpose].outputs[0];
  return out;
}

class PatchConvAsMatMul final : public Pass {
 public:
  PassInfo info() const override {
    return {kName,
            "Transpose(Reshape(Conv(X, W, b), [N, O, P]), (0, 2, 1)) with stride = kernel, no "
            "padding -> Reshape(MatMul(patch rows of X, W^T) + b, [N, P, O])",
            1};
  }

  Status apply(Network& network, std::vector<PassApplication>* applied) const override {
    Graph& g = network.graph;
    const Shapes shapes = inferredShapesOrNone(network);  // the rewrite keeps every other value
    auto index = std::make_unique<GraphIndex>(g);
    for (size_t at = 0; at < g.nodes.size();) {
      PatchConv m;
      if (!matchAt(g, *index, shapes, static_cast<int>(at), &m)) {
        ++at;
        continue;
      }
      std::vector<std::string> names = sourceNodesOf(g, {m.conv, m.reshape, m.transpose});
      std::vector<Node> chain = patchGemm(g, *index, m);
      // The chain stands where the Transpose was (X and the weights exist by then, the
      // tokens' readers come after); the Reshape and the Conv before it go.
      g.nodes.erase(g.nodes.begin() + m.transpose);
      g.nodes.insert(g.nodes.begin() + m.transpose, chain.begin(), chain.end());
      g.nodes.erase(g.nodes.begin() + m.reshape);
      g.nodes.erase(g.nodes.begin() + m.conv);
      applied->push_back({kName, names, chain[3].name});
      index = std::make_unique<GraphIndex>(g);  // node `at` is now the one after the Conv
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> makePatchConvAsMatMul() {
  return std::make_unique<PatchConvAsMatMul>();
}

}  // namespace kiln::passes
