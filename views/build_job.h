// The build the Build panel starts, as a job: what it needs (a snapshot of the
// network and the config) and what it gives back (the plan and its report, or the
// error), so the worker thread touches no widget and no document. Mirrors
// `kiln build` (app/cli/cmd_build.cpp): backend by name, timing cache loaded when
// the file exists and saved after, plan saved when a path is given.
#pragma once

#include <QString>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine_report.h"
#include "kiln/builder_config.h"
#include "kiln/graph.h"
#include "kiln/plan.h"
#include "kiln/status.h"

namespace kiln::studio {

class JobContext;

struct BuildRequest {
  std::shared_ptr<const Network> network;
  BuilderConfig config;  // callbacks, cache and replay are set by the job
  std::string backend = "cpu";
  std::string timingCachePath;  // "" for none
  std::string planPath;         // "" to keep the plan in memory only
  std::string title;            // the report's title (the model's file name)
  // Value inputs frozen to these values before the build (input_values.h).
  std::map<std::string, Tensor> inputValues;
};

struct BuildOutcome {
  Status status;  // the build's; ok when a plan was made
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<const inspector::EngineReport> report;
  std::vector<std::string> warnings;  // the builder's, then timing-cache and save problems
  bool saved = false;                 // the plan was written to planPath
};

// Runs on a worker thread: builds, reports phase progress (0..1 over the whole
// build) and honours the context's cancel flag.
BuildOutcome runBuildJob(const BuildRequest& request, JobContext& context);

// The overall fraction (0..1) of a builder progress step: shapes 0-5 %, timing
// 5-90 % by layers done, memory 90-95 %, plan 95-100 %.
double buildFraction(const BuildProgress& progress);

// The text fallback, for messages that are text only: the builder's warnings
// (BuildRecord::warnings, which plan files carry as recorded) have no node fields.
// Errors are Statuses and go through issueNodeName (studio_document.h), never here.
// The ONNX node the text names first ("layer 'q_matmul + q_bias': ..." names
// q_matmul), checked against `network`; "" when it names none of its nodes (or a name
// holds a quote, which this reading cannot tell from the closing one).
QString nodeNamedInText(const std::string& message, const Network* network);

}  // namespace kiln::studio
