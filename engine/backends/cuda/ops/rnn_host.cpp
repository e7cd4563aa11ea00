// LSTM, GRU and RNN on the GPU, the host half (rnn_common.h): attributes, shapes and
// activations read and checked as the CPU kernel does, and the support predicate.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/ops/rnn_common.h"

namespace kiln::cuda::rnn {
namespace {

// The activations (ops/rnn_params.h, the CPU's list), at most kMaxActivations.
Status parseActivations(const GpuKernelContext& ctx, Cell cell, CellParams* p) {
  auto acts = ops::rnnActivations(ctx.node(), cell, p->dirs);
  if (!acts.isOk())
    return acts.status().code() == StatusCode::kUnsupported
               ? ctx.unsupported(acts.status().message())
               : ctx.error(acts.status().message());
  if (acts->size() > static_cast<size_t>(kMaxActivations))
    return ctx.error("more activations than two directions take");
  std::copy(acts->begin(), acts->end(), p->acts);
  p->actsPerDirection = ops::rnnActivationsPerDirection(cell);
  return Status::ok();
}

const DeviceTensor* optionalInput(const GpuKernelContext& ctx, size_t i) {
  return i < ctx.inputCount() && ctx.hasInput(i) ? &ctx.input(i) : nullptr;
}

Status expectShape(const GpuKernelContext& ctx, const DeviceTensor* t, const Shape& shape,
                   const char* what) {
  if (t && t->shape != shape) {
    return ctx.error(std::string("input ") + what + " has shape " + shapeToString(t->shape) +
                     ", expected " + shapeToString(shape));
  }
  return Status::ok();
}

}  // namespace

Status configure(const GpuKernelContext& ctx, Cell cell, RnnInputs* in, CellParams* p) {
  for (size_t i = 0; i < 3; ++i) {
    if (!optionalInput(ctx, i))
      return ctx.error("required input " + std::to_string(i) + " is missing");
  }
  const bool lstm = cell == Cell::kLstm;
  in->x = &ctx.input(0);
  in->w = &ctx.input(1);
  in->r = &ctx.input(2);
  in->b = optionalInput(ctx, 3);
  in->lens = optionalInput(ctx, 4);
  in->h0 = optionalInput(ctx, 5);
  in->c0 = lstm ? optionalInput(ctx, 6) : nullptr;
  in->p = lstm ? optionalInput(ctx, 7) : nullptr;
  p->cell = cell;
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  const int64_t layout = ctx.opset() >= 14 ? ctx.node().attrInt("layout", 0) : 0;
  p->batchFirst = layout != 0;
  const std::string direction = ctx.node().attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("attribute 'direction' has unknown value '" + direction + "'");
  }
  p->dirs = direction == "bidirectional" ? 2 : 1;
  p->reverseOnly = direction == "reverse";
  if (in->x->rank() != 3 || in->w->rank() != 3 || in->r->rank() != 3) {
    return ctx.error("inputs X, W and R must be 3-D");
  }
  p->seq = in->x->shape[p->batchFirst ? 1 : 0];
  p->batch = in->x->shape[p->batchFirst ? 0 : 1];
  in->input = in->x->shape[2];
  p->hidden = in->r->shape[2];
  if (ctx.node().hasAttr("hidden_size") && ctx.node().attrInt("hidden_size", 0) != p->hidden) {
    return ctx.error("attribute 'hidden_size' does not match R");
  }
  p->gateWidth = gates * p->hidden;
  const Shape stateShape =
      p->batchFirst ? Shape{p->batch, p->dirs, p->hidden} : Shape{p->dirs, p->batch, p->hidden};
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->w, {p->dirs, p->gateWidth, in->input}, "W"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->r, {p->dirs, p->gateWidth, p->hidden}, "R"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->b, {p->dirs, 2 * p->gateWidth}, "B"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->h0, stateShape, "initial_h"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->c0, stateShape, "initial_c"));
  KILN_RETURN_IF_ERROR(expectShape(ctx, in->p, {p->dirs, 3 * p->hidden}, "P"));
  for (const DeviceTensor* t : {in->w, in->r, in->b, in->h0, in->c0, in->p}) {
    if (t && t->type != in->x->type) return ctx.error("inputs must share X's type");
  }
  if (in->lens) {
    KILN_RETURN_IF_ERROR(expectShape(ctx, in->lens, {p->batch}, "sequence_lens"));
    if (in->lens->type != DataType::kInt32 && in->lens->type != DataType::kInt64) {
      return ctx.unsupported(std::string("sequence_lens of type ") + dataTypeName(in->lens->type));
    }
    p->lens = in->lens->data;
    p->lensInt64 = in->lens->type == DataType::kInt64;
  }
  KILN_RETURN_IF_ERROR(parseActivations(ctx, cell, p));
  p->clip = ctx.node().attrFloat("clip", 0.f);
  p->linearBeforeReset = ctx.node().attrInt("linear_before_reset", 0) != 0;
  p->inputForget = ctx.node().attrInt("input_forget", 0) != 0;
  return Status::ok();
}

// Float storage data (not float64: no cuBLASLt path), int32/int64 sequence_lens and
// activations the device switch knows.
std::string supportsRecurrent(const Node& node, const std::vector<DataType>& types) {
  for (size_t i = 0; i < types.size(); ++i) {
    const DataType t = types[i];
    if (t == DataType::kUndefined) continue;
    if (i == 4) {
      if (t != DataType::kInt32 && t != DataType::kInt64)
        return std::string("sequence_lens of type ") + dataTypeName(t) + " stays on the host";
      continue;
    }
    if (t != DataType::kFloat32 && t != DataType::kFloat16 && t != DataType::kBFloat16)
      return std::string("no GPU kernel for ") + dataTypeName(t) + " inputs";
  }
  for (const std::string& name : node.attrStrings("activations")) {
    if (!ops::isRnnActivationName(name)) return "activation '" + name + "' has no GPU kernel";
  }
  return "";
}

}  // namespace kiln::cuda::rnn
