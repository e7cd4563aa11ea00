#include "backends/cuda/ops/fused_attention_race.h"

#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "backends/cuda/compiled_code_stores.h"
#include "backends/cuda/libraries.h"
#include "backends/cuda/ops/choice_offers.h"
#include "backends/cuda/ops/cudnn_attention.h"
#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/layer_choice.h"

namespace kiln::cuda {
namespace {

// The race's outcome as a plan record keeps it (a token: no spaces).
constexpr const char* kKilnWinner = "kiln";
constexpr const char* kCudnnWinner = "cudnn";

struct AttentionRaceState {
  std::string graphText;            // the operands the choice was made for
  std::shared_ptr<CudnnPlan> plan;  // set: cuDNN's graph runs the layer
  std::string implementation;
  std::string choice;  // the race's outcome as a plan records it (layer_choice.h); "" none
};

// "kiln", or "cudnn engine=..." for `plan`.
std::string choiceText(const CudnnPlan* plan) {
  if (!plan) return kKilnWinner;
  LayerChoice c;
  c.form = kCudnnWinner;
  c.hasEngine = true;
  c.engine = plan->choice;
  return encodeLayerChoice(c);
}

// One choice being made: the layer, its operands and its candidates.
struct Race {
  GpuKernelContext& ctx;
  cudnnHandle_t handle;
  const AttentionOperands& operands;
  const std::string& kilnDescription;
  const std::function<Status()>& runKiln;
  std::string path;  // "auto" or "cudnn"
};

std::string cudnnDescription(const CudnnPlan& plan) {
  return "cudnn fused attention " + plan.description.substr(6);  // "engine N[ rtc]"
}

std::string origin(const CudnnPlanRecord& record) {
  return record.fromPlanFile ? "from the plan file" : "chosen earlier";
}

// The graph's execution plans: the recorded engine built again, else the heuristics'
// candidates; none (and `why`) when cuDNN refuses the graph.
void cudnnPlans(const Race& r, cudnnBackendDescriptor_t graph, const CudnnPlanRecord* record,
                std::vector<std::unique_ptr<CudnnPlan>>* plans, std::string* why) {
  if (record) {
    Result<std::unique_ptr<CudnnPlan>> plan = planFromRecord(r.handle, graph, *record);
    if (plan.isOk()) {
      plans->push_back(std::move(plan.value()));
      return;
    }
  }
  std::vector<std::string> rejected;
  const Status found =
      heuristicPlans(r.handle, graph, cudnnAttentionPlanFilter(r.ctx), plans, &rejected);
  if (!found.isOk()) {
    *why = found.message();
  } else if (plans->empty()) {
    for (const std::string& reason : rejected) *why += (why->empty() ? "" : "; ") + reason;
    if (why->empty()) *why = "no engine for the graph";
  }
}

// Times `plans` (each failing one is not a candidate); the fastest, or nullptr. A single
// plan on path cudnn is taken untimed.
std::shared_ptr<CudnnPlan> fastestPlan(const Race& r,
                                       std::vector<std::unique_ptr<CudnnPlan>>* plans,
                                       float* bestMs, std::ostringstream* timings,
                                       std::vector<TimedChoice>* ran) {
  if (r.path == "cudnn" && plans->size() == 1) return std::move(plans->front());
  std::shared_ptr<CudnnPlan> best;
  for (std::unique_ptr<CudnnPlan>& plan : *plans) {
    Result<float> ms = timeOnStream(
        r.ctx.stream(), [&] { return runCudnnAttention(r.ctx, r.handle, *plan, r.operands); });
    *timings << (timings->tellp() > 0 ? ", " : "") << "cudnn " << plan->description.substr(6);
    if (!ms.isOk()) {
      *timings << " failed: " << ms.status().message();
      continue;
    }
    *timings << "=" << ms.value() << "ms";
    ran->push_back({choiceText(plan.get()), ms.value()});
    if (ms.value() < *bestMs) {
      *bestMs = ms.value();
      best = std::move(plan);
    }
  }
  return best;
}

// Kiln's kernel against cuDNN's plans; the outcome in `state` and the plan cache.
Status timeCandidates(const Race& r, const std::string& key,
                      std::vector<std::unique_ptr<CudnnPlan>> plans, AttentionRaceState* state) {
  std::ostringstream timings;
  float kilnMs = 1e30f, cudnnMs = 1e30f;
  std::vector<TimedChoice> ran;  // every complete choice that ran, for a builder to time
  if (r.path == "auto") {
    KILN_ASSIGN_OR_RETURN(kilnMs, timeOnStream(r.ctx.stream(), r.runKiln));
    timings << "kiln=" << kilnMs << "ms";
    ran.push_back({kKilnWinner, kilnMs});
  }
  std::shared_ptr<CudnnPlan> cudnn = fastestPlan(r, &plans, &cudnnMs, &timings, &ran);
  if (r.path == "auto") r.ctx.offerChoices(choicesWorthTiming(ran));
  if (!cudnn) {
    if (r.path == "cudnn")
      return r.ctx.unsupported("no cuDNN fused attention plan ran: " + timings.str());
    state->implementation = r.kilnDescription + "; timed {" + timings.str() + "}";
    if (r.path == "auto") state->choice = kKilnWinner;
    return Status::ok();
  }
  rememberCudnnPlan(cudnnPlanStoreOf(r.ctx), key, *cudnn, r.ctx.node().displayName(),
                    timings.str());
  const bool cudnnWins = r.path == "cudnn" || cudnnMs < kilnMs;
  if (r.path == "auto")
    rememberRaceWinner(cudnnPlanStoreOf(r.ctx), key, cudnnWins ? kCudnnWinner : kKilnWinner,
                       timings.str());
  state->plan = cudnnWins ? cudnn : nullptr;
  if (r.path == "auto") state->choice = choiceText(state->plan.get());
  state->implementation = (cudnnWins ? cudnnDescription(*cudnn) : r.kilnDescription) +
                          (r.path == "cudnn" ? " (path cudnn)" : "") +
                          (timings.tellp() > 0 ? "; timed {" + timings.str() + "}" : "");
  return Status::ok();
}

// `state` set up as a plan's recorded outcome `planned` says, without timing: Kiln's
// kernel, or cuDNN's engine configuration (its serialized plan when the record of `key`
// holds that engine). kUnsupported with the reason when it does not apply here.
Status adoptPlannedChoice(const Race& r, const std::string& key, const std::string& planned,
                          AttentionRaceState* state) {
  LayerChoice c;
  if (!parseLayerChoice(planned, &c) || c.paddedChannels > 0 || c.groups > 0)
    return unsupported("not an attention choice");
  if (c.form == kKilnWinner && !c.hasEngine) {
    state->implementation = r.kilnDescription + " (the plan's choice: " + planned + ")";
    return Status::ok();
  }
  if (c.form != kCudnnWinner || !c.hasEngine) return unsupported("not an attention choice");
  CudnnDescriptor graph;
  KILN_RETURN_IF_ERROR(buildCudnnAttentionGraph(r.handle, r.operands, &graph));
  KILN_ASSIGN_OR_RETURN(
      state->plan, planOfRecordedChoice(cudnnPlanStoreOf(r.ctx), r.handle, graph.get(), key,
                                        c.engine, cudnnAttentionPlanFilter(r.ctx).workspaceLimit,
                                        r.ctx.node().displayName()));
  state->implementation = cudnnDescription(*state->plan) + " (the plan's choice: " + planned + ")";
  return Status::ok();
}

// An earlier race of the same graph (this process's or the plan file's) taken as it is,
// else the candidates timed.
Status chooseByRecordOrTiming(const Race& r, const std::string& key, const std::string& layer,
                              AttentionRaceState* state) {
  CudnnPlanRecord record;
  const bool recorded = findCudnnPlanRecord(cudnnPlanStoreOf(r.ctx), key, &record);
  const bool adopt = recorded && r.path == "auto";
  if (adopt && record.raceWinner == kKilnWinner) {  // cuDNN's plan is not needed
    rememberCudnnPlanRecord(cudnnPlanStoreOf(r.ctx), key, record, layer);
    state->implementation =
        r.kilnDescription + "; " + origin(record) + " (timed then {" + record.raceTimings + "})";
    state->choice = kKilnWinner;
    return Status::ok();
  }
  CudnnDescriptor graph;
  std::vector<std::unique_ptr<CudnnPlan>> plans;
  std::string why;
  if (Status built = buildCudnnAttentionGraph(r.handle, r.operands, &graph); !built.isOk())
    why = "cuDNN refuses the graph: " + built.message();
  else
    cudnnPlans(r, graph.get(), recorded ? &record : nullptr, &plans, &why);
  if (plans.empty()) {
    if (r.path == "cudnn") return r.ctx.unsupported("cuDNN's fused attention: " + why);
    state->implementation = r.kilnDescription + "; cudnn attention: not a candidate (" + why + ")";
    return Status::ok();
  }
  if (adopt && record.raceWinner == kCudnnWinner) {
    rememberCudnnPlanRecord(cudnnPlanStoreOf(r.ctx), key, record, layer);
    state->plan = std::move(plans.front());
    state->implementation = cudnnDescription(*state->plan) + "; " + origin(record) +
                            " (timed then {" + record.raceTimings + "})";
    state->choice = choiceText(state->plan.get());
    return Status::ok();
  }
  return timeCandidates(r, key, std::move(plans), state);
}

// Chooses the layer's implementation for `state->graphText`: the plan's recorded choice,
// else an earlier race of the same graph (this process's or the plan file's) as it is,
// else the candidates timed.
Status choose(const Race& r, AttentionRaceState* state) {
  KILN_ASSIGN_OR_RETURN(const std::string key, cudnnPlanKey(state->graphText));
  const std::string layer = r.ctx.node().displayName();
  std::string replayNote;
  if (const std::string planned = r.path == "auto" ? r.ctx.plannedChoice() : ""; !planned.empty()) {
    const Status adopted = adoptPlannedChoice(r, key, planned, state);
    if (adopted.isOk()) {
      state->choice = planned;
      return Status::ok();
    }
    *state = AttentionRaceState{state->graphText, nullptr, "", ""};
    replayNote = "; the plan's choice '" + planned + "' does not apply here: " + adopted.message() +
                 ": timed again";
  }
  Status chosen = chooseByRecordOrTiming(r, key, layer, state);
  state->implementation += replayNote;
  return chosen;
}

}  // namespace

Status runFusedAttention(GpuKernelContext& ctx, const AttentionOperands& operands,
                         const std::string& kilnDescription,
                         const std::function<Status()>& runKiln) {
  const std::string path = ctx.node().attrString("path", "auto");
  if (path != "auto" && path != "kiln" && path != "cudnn")
    return ctx.error("unknown path '" + path + "' (auto, kiln, cudnn)");
  if (path == "kiln") {
    ctx.setImplementation(kilnDescription + " (path kiln)");
    return runKiln();
  }
  // Checked at every run: the pointers' alignment is the run's.
  const std::string whyNot = cudnnAttentionUnsupported(operands);
  if (!whyNot.empty()) {
    if (path == "cudnn")
      return ctx.unsupported("cuDNN's fused attention does not apply: " + whyNot);
    ctx.setImplementation(kilnDescription + "; cudnn attention: not a candidate (" + whyNot + ")");
    return runKiln();
  }
  std::shared_ptr<void>& slot = ctx.layerState();
  auto state = std::static_pointer_cast<AttentionRaceState>(slot);
  const std::string graphText = cudnnAttentionGraphText(operands);
  if (state && state->graphText == graphText && !state->plan) {
    ctx.setImplementation(state->implementation);
    return runKiln();
  }
  KILN_ASSIGN_OR_RETURN(cudnnHandle_t handle, ctx.libraries().cudnn(ctx.stream()));
  if (!state || state->graphText != graphText) {
    state = std::make_shared<AttentionRaceState>();
    state->graphText = graphText;
    KILN_RETURN_IF_ERROR(
        choose(Race{ctx, handle, operands, kilnDescription, runKiln, path}, state.get()));
    if (state->plan && operands.mask && !operands.geometry.nanToZero)  // runCudnnAttention's pass
      state->implementation +=
          "; then rows whose every key is masked set to NaN, the unfused Softmax's value "
          "(cuDNN writes 0)";
    if (!state->choice.empty()) ctx.setChoice(state->choice);
    slot = state;
  }
  ctx.setImplementation(state->implementation);
  return state->plan ? runCudnnAttention(ctx, handle, *state->plan, operands) : runKiln();
}

}  // namespace kiln::cuda
