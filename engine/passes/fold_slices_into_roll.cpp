// fold_slices_into_roll: an export's torch.roll along one axis is two Slices and a Concat,
//   Concat(Slice(X, s:d, axis a), Slice(X, 0:s, axis a), axis a) = Roll(X; shifts[a] = d - s)
// (ai.kiln Roll, ops/roll_params.h: Y's first d - s rows along a are X's last ones), and a Roll
// of a Roll's output (the next axis of one torch.roll: Swin's cyclic window shift over H, then
// W, and its reverse) is one Roll, the shifts added. The Slices and the Concat move X twice per
// axis; the Roll moves it once for all its axes (Swin-T at batch 128: 20 such pairs, 1.3 ms of
// Slices and Concats on an H200, 2026-12-02).
// Conditions: both Slices read the same X, name the Concat's axis alone (constant starts and
// ends, steps of 1 or none), take [s, d) and [0, s) of X's static dim d with 0 < s < d, and
// are read by the Concat alone; X's rank is known. A Roll merges into the next one when the
// two Slices are all that read its output.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/roll_params.h"
#include "ops/slice_params.h"
#include "passes/fusion_passes.h"
#include "passes/rewrite_helpers.h"

namespace kiln::passes {
namespace {

using namespace rewrite;

constexpr const char* kName = "fold_slices_into_roll";

// The range [first, first + count) Slice `slice` takes of its input's axis `axis` (of `dim`
// elements, rank `rank`), when it slices that axis alone with constant parameters and step 1.
bool sliceOfAxis(const Node& slice, const GraphIndex& index, int64_t rank, int64_t axis,
                 int64_t dim, int64_t* first, int64_t* count) {
  ops::SliceArgs args;
  bool axesGiven = false, stepsGiven = false;
  if (slice.opset < 10) {
    args.starts = slice.attrInts("starts");
    args.ends = slice.attrInts("ends");
    args.axes = slice.attrInts("axes");
    axesGiven = slice.hasAttr("axes");
  } else {
    if (!slice.hasInput(1) || !slice.hasInput(2) ||
        !constantInts(index.constant(slice.inputs[1]), &args.starts) ||
        !constantInts(index.constant(slice.inputs[2]), &args.ends))
      return false;
    if (slice.hasInput(3)) {
      if (!constantInts(index.constant(slice.inputs[3]), &args.axes)) return false;
      axesGiven = true;
    }
    if (slice.hasInput(4)) {
      if (!constantInts(index.constant(slice.inputs[4]), &args.steps)) return false;
      stepsGiven = true;
    }
  }
  if (!ops::completeSliceArgs(axesGiven, stepsGiven, &args).isOk() || args.starts.size() != 1)
    return false;
  int64_t named = args.axes[0];
  if (named < -rank || named >= rank) return false;
  if (named < 0) named += rank;
  if (named != axis || args.steps[0] != 1) return false;
  // numpy's clamping of the one range, on the axis alone.
  args.axes = {0};
  auto planned = ops::planSlice(Shape{dim}, args);
  if (!planned.isOk()) return false;
  *first = planned.value()[0].first;
  *count = planned.value()[0].count;
  return true;
}

std::optional<Fusion> foldAt(const Graph& g, const GraphIndex& index, const InferredShapes& shapes,
                             int at) {
  const Node& concat = g.nodes[at];
  if (!isOnnxOp(concat, "Concat", 2)) return std::nullopt;
  const int tail = index.producer(concat.inputs[0]), head = index.producer(concat.inputs[1]);
  if (tail < 0 || head < 0 || tail == head) return std::nullopt;
  const Node& tailSlice = g.nodes[tail];
  const Node& headSlice = g.nodes[head];
  if (!isOnnxOpType(tailSlice, "Slice") || !isOnnxOpType(headSlice, "Slice") ||
      tailSlice.outputs.size() != 1 || headSlice.outputs.size() != 1 ||
      tailSlice.inputs[0] != headSlice.inputs[0] || index.soleReader(concat.inputs[0]) != at ||
      index.soleReader(concat.inputs[1]) != at)
    return std::nullopt;
  const std::string& x = tailSlice.inputs[0];
  const SymbolicShape* shape = shapeOf(shapes, x);
  if (!shape || shape->empty()) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(shape->size());
  int64_t axis = concat.attrInt("axis", 0);
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  if (!(*shape)[axis].isConst()) return std::nullopt;
  const int64_t dim = (*shape)[axis].constValue();
  int64_t tailFirst = 0, tailCount = 0, headFirst = 0, headCount = 0;
  if (!sliceOfAxis(tailSlice, index, rank, axis, dim, &tailFirst, &tailCount) ||
      !sliceOfAxis(headSlice, index, rank, axis, dim, &headFirst, &headCount))
    return std::nullopt;
  // Y = X[s:d] then X[0:s]: the tail is [s, d), the head [0, s), 0 < s < d.
  const int64_t s = headCount;
  if (headFirst != 0 || s <= 0 || s >= dim || tailFirst != s || tailCount != dim - s)
    return std::nullopt;
  std::vector<int64_t> shifts(static_cast<size_t>(rank), 0);
  shifts[axis] = dim - s;
  std::vector<int> nodes = {tail, head, at};
  std::string source = x;
  // A Roll whose output only these two Slices read: one Roll for both.
  const int inner = index.producer(x);
  if (inner >= 0) {
    const Node& previous = g.nodes[inner];
    std::vector<int> readers = index.readers(x);
    std::sort(readers.begin(), readers.end());
    std::vector<int> slices = {std::min(tail, head), std::max(tail, head)};
    const std::vector<int64_t> previousShifts = previous.attrInts("shifts");
    if (previous.domain == kKilnDomain && previous.opType == ops::kRollOp &&
        previous.inputs.size() == 1 && !previous.inputs[0].empty() &&
        previous.outputs.size() == 1 && readers == slices &&
        previousShifts.size() == shifts.size()) {
      for (size_t d = 0; d < shifts.size(); ++d) {
        const int64_t size = (*shape)[d].isConst() ? (*shape)[d].constValue() : 0;
        // The sum taken mod the dim where it is known (rollShifts takes any value).
        shifts[d] += size > 0 ? previousShifts[d] % size : previousShifts[d];
        if (size > 0) shifts[d] %= size;
      }
      source = previous.inputs[0];
      nodes.push_back(inner);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  Node roll;
  roll.opType = ops::kRollOp;
  roll.domain = kKilnDomain;
  roll.opset = 1;
  roll.inputs = {source};
  roll.outputs = {concat.outputs[0]};
  roll.attributes["shifts"] = intsAttribute(shifts);
  for (const std::string& name : sourceNodesOf(g, nodes))
    roll.name += (roll.name.empty() ? "" : " + ") + name;
  return Fusion{nodes, std::move(roll)};
}

}  // namespace

std::unique_ptr<Pass> makeFoldSlicesIntoRoll() {
  // Rewrites rename no value (the Roll writes the Concat's output): one inference serves.
  return makeFusionPass(
      {kName,
       "Concat(Slice(X, s:d), Slice(X, 0:s)) along one axis -> Roll(X; d - s) (torch.roll), "
       "a Roll of a Roll -> one Roll with both shifts",
       1},
      foldAt);
}

}  // namespace kiln::passes
