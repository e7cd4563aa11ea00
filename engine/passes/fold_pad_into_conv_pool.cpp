// fold_pad_into_conv_pool: an explicit Pad of the spatial dims before a Conv or a
// pooling becomes the op's own pads (added to the ones it has):
//   Conv(Pad(x, p, constant 0)) = Conv(x; pads + p)         zero padding is Conv's own
//   AveragePool(Pad(x, p, constant 0)) = AveragePool(x; pads + p, count_include_pad = 1)
//       when the pool counted its pads already (count_include_pad = 1) or had none:
//       the padded zeros are real elements of every window's divisor either way
//   MaxPool(Pad(x, p, constant v)) = MaxPool(x; pads + p)   for v = -inf or lowest (a tap
//       that never wins), or v = 0 when x is a Relu output (x >= 0, so a 0 tap never
//       beats the window's real maximum), with unit dilations and every pad smaller
//       than the kernel, so each window holds a real element.
// Only constant-mode Pads with non-negative constant pads, none on the batch and
// channel axes; the op with explicit or VALID padding (not SAME_*), pools without
// ceil_mode (which drops windows starting in the pads) and MaxPool's Indices unread.
// The Pad's output must be read by the op alone. Runs before fold_batch_norm and
// fuse_conv_bias_activation, which then see a plain Conv.
#include <algorithm>
#include <cmath>
#include <limits>

#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_pad_into_conv_pool";

// Pad's pads for every axis ([begin..., end...]) and its constant value.
struct PadSpec {
  std::vector<int64_t> pads;
  double value = 0.0;
};

bool readPad(const Node& pad, const GraphIndex& index, const Shapes& shapes, PadSpec* spec) {
  if (pad.attrString("mode", "constant") != "constant") return false;
  if (pad.opset < 11) {
    spec->pads = pad.attrInts("pads");
    spec->value = pad.attrFloat("value", 0.f);
    return !spec->pads.empty() && spec->pads.size() % 2 == 0;
  }
  if (!pad.hasInput(1) || !constantInts(index.constant(pad.inputs[1]), &spec->pads) ||
      spec->pads.size() % 2 != 0)
    return false;
  if (pad.hasInput(2)) {
    const Tensor* v = index.constant(pad.inputs[2]);
    if (!v || v->numel() != 1) return false;
    spec->value = v->valueAsDouble(0);
  }
  if (!pad.hasInput(3)) return true;
  // Opset 18's axes: pads for the listed axes only.
  std::vector<int64_t> axes;
  const SymbolicShape* s = shapeOf(shapes, pad.inputs[0]);
  if (!s || !constantInts(index.constant(pad.inputs[3]), &axes) ||
      spec->pads.size() != 2 * axes.size())
    return false;
  const int64_t rank = static_cast<int64_t>(s->size());
  std::vector<int64_t> full(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) return false;
    full[a] = spec->pads[i];
    full[a + rank] = spec->pads[i + axes.size()];
  }
  spec->pads = std::move(full);
  return true;
}

// The op's pads with the Pad's spatial pads added, or false when it cannot take them.
bool combinedPads(const Node& op, const PadSpec& pad, std::vector<int64_t>* out) {
  const size_t rank = pad.pads.size() / 2;
  if (rank < 3) return false;
  const size_t spatial = rank - 2;
  for (size_t a = 0; a < rank; ++a) {
    if (pad.pads[a] < 0 || pad.pads[a + rank] < 0) return false;
    if (a < 2 && (pad.pads[a] != 0 || pad.pads[a + rank] != 0)) return false;
  }
  const std::string autoPad = op.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") return false;
  std::vector<int64_t> own(2 * spatial, 0);
  if (autoPad == "NOTSET" && op.hasAttr("pads")) own = op.attrInts("pads");
  if (own.size() != 2 * spatial) return false;
  out->resize(2 * spatial);
  for (size_t d = 0; d < spatial; ++d) {
    (*out)[d] = own[d] + pad.pads[2 + d];
    (*out)[d + spatial] = own[d + spatial] + pad.pads[2 + d + rank];
  }
  return true;
}

bool isNonNegative(const Graph& g, const GraphIndex& index, const std::string& value) {
  const int writer = index.producer(value);
  return writer >= 0 && isOnnxOp(g.nodes[writer], "Relu", 1);
}

// MaxPool: every window keeps a real element (unit dilations, pads below the kernel).
bool windowsHoldRealTaps(const Node& pool, const std::vector<int64_t>& pads) {
  const std::vector<int64_t> kernel = pool.attrInts("kernel_shape");
  const std::vector<int64_t> dilations = pool.attrInts("dilations");
  if (kernel.empty() || pads.size() != 2 * kernel.size()) return false;
  for (int64_t d : dilations)
    if (d != 1) return false;
  for (size_t i = 0; i < pads.size(); ++i)
    if (pads[i] >= kernel[i % kernel.size()]) return false;
  return true;
}

bool poolTakesPad(const Graph& g, const GraphIndex& index, const Node& pool, const Node& pad,
                  const PadSpec& spec, const std::vector<int64_t>& pads, bool* countPads) {
  if (pool.attrInt("ceil_mode", 0) != 0) return false;
  if (pool.opType == "AveragePool") {
    if (spec.value != 0.0) return false;
    const std::vector<int64_t> own = pool.attrInts("pads");
    const bool ownPads = std::any_of(own.begin(), own.end(), [](int64_t p) { return p != 0; }) &&
                         pool.attrString("auto_pad", "NOTSET") == "NOTSET";
    *countPads = true;
    return !ownPads || pool.attrInt("count_include_pad", 0) != 0;
  }
  if (pool.outputs.size() > 1 && !pool.outputs[1].empty() &&
      !index.readers(pool.outputs[1]).empty())
    return false;  // Indices would count positions of the padded input
  const bool neverWins =
      std::isinf(spec.value) ? spec.value < 0 : spec.value <= std::numeric_limits<float>::lowest();
  const bool zeroBelowInput = spec.value == 0.0 && isNonNegative(g, index, pad.inputs[0]);
  return (neverWins || zeroBelowInput) && windowsHoldRealTaps(pool, pads);
}

struct Match {
  int pad = -1, op = -1;
  std::vector<int64_t> pads;
  bool countPads = false;
};

bool matchAt(const Graph& g, const GraphIndex& index, const Shapes& shapes, int at, Match* m) {
  const Node& op = g.nodes[at];
  const bool conv = isOnnxOpType(op, "Conv");
  if (!conv && !isOnnxOpType(op, "AveragePool") && !isOnnxOpType(op, "MaxPool")) return false;
  if (!op.hasInput(0)) return false;
  const int padAt = index.producer(op.inputs[0]);
  if (padAt < 0 || index.soleReader(op.inputs[0]) != at) return false;
  const Node& pad = g.nodes[padAt];
  PadSpec spec;
  if (!isOnnxOpType(pad, "Pad") || !pad.hasInput(0) || pad.outputs.size() != 1 ||
      !readPad(pad, index, shapes, &spec) || !combinedPads(op, spec, &m->pads))
    return false;
  if (conv ? spec.value != 0.0 : !poolTakesPad(g, index, op, pad, spec, m->pads, &m->countPads))
    return false;
  m->pad = padAt;
  m->op = at;
  return true;
}

// Shapes only give Pad's axes input a rank.
std::optional<Fusion> foldAt(Graph& g, const GraphIndex& index, const Shapes& shapes, int at) {
  Match m;
  if (!matchAt(g, index, shapes, at, &m)) return std::nullopt;
  const Node& pad = g.nodes[m.pad];
  Fusion fusion;
  fusion.nodes = {m.pad, m.op};
  Node& folded = fusion.fused;
  folded = g.nodes[m.op];
  folded.name = pad.displayName() + " + " + folded.displayName();
  folded.inputs[0] = pad.inputs[0];
  folded.attributes.erase("auto_pad");
  folded.attributes["pads"] = intsAttribute(m.pads);
  if (m.countPads) folded.attributes["count_include_pad"] = intAttribute(1);
  return fusion;
}

}  // namespace

std::unique_ptr<Pass> makeFoldPadIntoConvPool() {
  return makeFusionPass(
      {kName, "Conv/AveragePool(Pad(x, p, 0)), MaxPool(Pad(x, p, -inf)) -> the op with pads + p",
       1},
      foldAt);
}

}  // namespace kiln::passes
