// `kiln sweep MODEL.onnx --vary ... --max-error SPEC`: builds, checks and times every
// configuration of a product of build options, locally or as a Slurm job array, into a
// resumable JSONL log; prints the table, the Pareto front and the best build's command.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "cli/args.h"
#include "cli/build_options.h"
#include "cli/commands.h"
#include "cli/sweep_process.h"
#include "cli/sweep_runner.h"
#include "cli/sweep_shapes.h"
#include "kiln/file_io.h"

namespace kiln::cli {

const char kSweepUsage[] =
    "usage: kiln sweep MODEL.onnx --vary NAME=V1,V2,... [--vary ...] --max-error SPEC [options]\n"
    "  --vary precision=fp32,fp16,bf16,int8   axes of the product; any other NAME is a kiln\n"
    "         optimization-level=0,2,3        build option (--NAME V); values holding commas\n"
    "         'opt-shapes=x:1x16;x:4x16'      are separated by ';'\n"
    "  --max-error SPEC      accuracy gate against FP32: cosine>=0.999, max-abs<=1e-2,\n"
    "                        max-rel<=X, mean-abs<=X; several joined by ',' (all hold)\n"
    "  --backend cpu|cuda (cpu)  --min-shapes/--opt-shapes/--max-shapes S  (fixed profile)\n"
    "  --accuracy-data DIR [--preprocess SPEC] | --load-inputs in:x.npy,... | --shapes S\n"
    "                        inputs of the accuracy check (default: seeded random at the\n"
    "                        plan's opt shapes); --shapes also sets the timed shapes\n"
    "  --calib-cache FILE | --calib-data DIR   what precision=int8 builds from (the data\n"
    "                        folder is calibrated once into DIR/calib.cache)\n"
    "  --iterations N (20)   timed runs per configuration (kiln run)\n"
    "  --dir DIR (MODEL.sweep)  plans, reports and tasks; --log FILE (DIR/sweep.jsonl)\n"
    "  --continue            resume: skip configurations already in the log\n"
    "  --retry-failed        with --continue, run failed and cancelled ones again\n"
    "  --jobs N (1)          configurations at once (local runner; times then contend)\n"
    "  --json                the final report as JSON\n"
    "  --slurm [--partition P] [--gres gpu:1] [--time T] [--array-max N] [--poll S (10)]\n"
    "          [--max-wait S]  one Slurm job array, tracked with squeue/sacct; Ctrl-C\n"
    "                        cancels it (scancel). docs/sweep.md, docs/scale-out.md\n"
    "  --task K DIR          run configuration K of the sweep in DIR (what each task runs)\n"
    "usage: kiln sweep MODEL.onnx --shape-sweep INPUT:LO..HI [--opt-shapes S] [options]\n"
    "  times a dynamic dimension (INPUT's first symbolic one, and every dimension of that\n"
    "  symbol) across LO..HI: a plan per point (opt = the point, min LO, max HI), each run\n"
    "  at every point; proposes the fewest profiles that keep every point within\n"
    "  --tolerance F (0.10) of its own-opt time. --backend, --precision fp32|fp16|bf16,\n"
    "  --iterations, --dir (MODEL.shape-sweep), --json as above\n"
    "exit: 0 done, 1 error, 2 usage, 3 no configuration passed the gate, 130 interrupted\n";

namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using sweep::SweepContext;

// Build options a --vary axis must not take: they belong to the sweep itself.
const std::set<std::string> kNotAnAxis = {"output",       "calib-cache", "accuracy-data",
                                          "preprocess",   "backend",     "sign",
                                          "save-tactics", "timing-cache"};

Status checkAxes(const std::vector<kiln::sweep::Axis>& axes, const Args& args) {
  const std::set<std::string> valued = buildValuedOptions();
  std::set<std::string> seen;
  for (const auto& axis : axes) {
    if (!seen.insert(axis.name).second)
      return invalidArgument("--vary " + axis.name + " given twice");
    if (axis.name == "precision") continue;
    if (!valued.count(axis.name) || kNotAnAxis.count(axis.name))
      return invalidArgument("--vary " + axis.name +
                             ": not a kiln build option a sweep can vary (precision, "
                             "optimization-level, opt-shapes, workspace, tactic-sources, ...)");
    if (axis.name == "opt-shapes" && (!args.has("min-shapes") || !args.has("max-shapes")))
      return invalidArgument("--vary opt-shapes needs --min-shapes and --max-shapes");
  }
  return Status::ok();
}

bool wantsInt8(const std::vector<kiln::sweep::Configuration>& configurations) {
  for (const auto& c : configurations)
    for (const auto& [name, value] : c.values)
      if (name == "precision" && value == "int8") return true;
  return false;
}

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal();
}

// The value of `name` in a configuration, or `fallback`.
std::string valueOf(const kiln::sweep::Configuration& c, const std::string& name,
                    const std::string& fallback) {
  for (const auto& [axis, value] : c.values)
    if (axis == name) return value;
  return fallback;
}

// The three commands a task runs for configuration `c`, and the build's command line.
json configurationJson(const Args& args, const kiln::sweep::Configuration& c,
                       const std::string& dir, const std::string& calibCache) {
  const std::string model = absolute(args.positional()[0]);
  const std::string folder = kiln::sweep::folderName(c);
  const std::string at = dir + "/configs/" + folder;
  const std::string plan = at + "/plan.kiln";
  std::vector<std::string> build{"build", model,       "-o",
                                 plan,    "--backend", args.value("backend", kDefaultBuildBackend)};
  for (const char* shapes : {"min-shapes", "opt-shapes", "max-shapes"})
    if (args.has(shapes) && valueOf(c, shapes, "").empty())
      build.insert(build.end(), {std::string("--") + shapes, args.value(shapes)});
  for (const std::string& o : kiln::sweep::buildOptions(c)) build.push_back(o);
  if (valueOf(c, "precision", "") == "int8")
    build.insert(build.end(), {"--calib-cache", calibCache});
  std::vector<std::string> shown{"kiln"};
  shown.insert(shown.end(), build.begin(), build.end());
  build.insert(build.end(), {"--json", "--quiet"});
  std::vector<std::string> inputs;
  for (const char* option : {"load-inputs", "seed"})
    if (args.has(option))
      inputs.insert(inputs.end(), {std::string("--") + option, args.value(option)});
  std::vector<std::string> compare{"compare", plan,       model,
                                   "--json",  "--output", at + "/accuracy.json"};
  compare.insert(compare.end(), inputs.begin(), inputs.end());
  if (args.has("accuracy-data"))
    compare.insert(compare.end(), {"--data", absolute(args.value("accuracy-data"))});
  if (args.has("preprocess"))
    compare.insert(compare.end(), {"--preprocess", args.value("preprocess")});
  if (args.has("shapes")) compare.insert(compare.end(), {"--shapes", args.value("shapes")});
  std::vector<std::string> run{"run",
                               plan,
                               "--json",
                               "--iterations",
                               args.value("iterations", "20"),
                               "--export-profile",
                               at + "/profile.json"};
  run.insert(run.end(), inputs.begin(), inputs.end());
  const std::string timed =
      args.value("shapes", valueOf(c, "opt-shapes", args.value("opt-shapes")));
  if (!timed.empty()) run.insert(run.end(), {"--shapes", timed});
  json values = json::object();
  for (const auto& [name, value] : c.values) values[name] = value;
  return {{"index", c.index},    {"key", c.key},       {"values", values},
          {"folder", folder},    {"plan", plan},       {"command", kiln::sweep::shellJoin(shown)},
          {"build_json", build}, {"compare", compare}, {"run", run}};
}

// Calibrates once for every int8 configuration when only a data folder was given.
Status calibrateOnce(const Args& args, const std::string& kiln, const std::string& cache) {
  if (fs::exists(cache)) return Status::ok();
  std::fprintf(stderr, "kiln sweep: calibrating %s on %s for the int8 configurations\n",
               args.positional()[0].c_str(), args.value("calib-data").c_str());
  std::vector<std::string> argv{
      kiln, "calibrate", args.positional()[0], "--data", args.value("calib-data"), "-o", cache};
  if (args.has("preprocess")) argv.insert(argv.end(), {"--preprocess", args.value("preprocess")});
  auto pid = sweep::spawn(argv, "/dev/null", "");
  if (!pid.isOk()) return pid.status();
  if (sweep::waitFor(*pid) != 0)
    return invalidArgument("kiln calibrate failed (its error is above)");
  return Status::ok();
}

// Writes DIR/tasks.json; with --continue, refuses one that names other configurations.
Status writeTasks(const Args& args, const std::string& dir, const json& tasks) {
  const std::string path = dir + "/tasks.json";
  if (args.flag("continue") && fs::exists(path)) {
    auto old = sweep::loadSweep(dir, "");
    if (old.isOk()) {
      std::vector<std::string> before, now;
      for (const json& c : old->tasks["configurations"]) before.push_back(c.value("key", ""));
      for (const json& c : tasks["configurations"]) now.push_back(c.value("key", ""));
      if (before != now)
        return invalidArgument(path +
                               " holds other configurations than these --vary lists: "
                               "resume with the same ones, or use another --dir");
    }
  }
  return writeFileAtomically(path, tasks.dump(1) + "\n", "the task file");
}

Result<json> prepareTasks(const Args& args, const std::string& dir,
                          std::vector<kiln::sweep::Configuration>* configurations) {
  std::vector<kiln::sweep::Axis> axes;
  for (const std::string& spec : args.values("vary")) {
    KILN_ASSIGN_OR_RETURN(auto axis, kiln::sweep::parseAxis(spec));
    axes.push_back(std::move(axis));
  }
  if (axes.empty()) return invalidArgument("give at least one --vary NAME=V1,V2,...");
  KILN_RETURN_IF_ERROR(checkAxes(axes, args));
  *configurations = kiln::sweep::expandAxes(axes);
  std::string calibCache = args.value("calib-cache");
  if (wantsInt8(*configurations) && calibCache.empty() && !args.has("calib-data"))
    return invalidArgument(
        "precision=int8 needs INT8 ranges: --calib-cache CACHE (kiln calibrate) or --calib-data "
        "DIR (calibrated once for the sweep)");
  if (calibCache.empty()) calibCache = dir + "/calib.cache";
  json tasks = {{"version", 1},
                {"model", absolute(args.positional()[0])},
                {"kiln", sweep::selfExecutable()},
                {"gate", args.value("max-error")},
                {"configurations", json::array()}};
  double delay;
  KILN_RETURN_IF_ERROR(args.doubleValue("task-delay", 0, &delay));
  tasks["task_delay"] = delay;
  for (const auto& c : *configurations)
    tasks["configurations"].push_back(configurationJson(args, c, dir, absolute(calibCache)));
  return tasks;
}

// Configurations the log does not hold yet (--retry-failed: or holds as failed).
std::vector<int> pendingConfigurations(const SweepContext& sweep, const kiln::sweep::Log& log,
                                       bool retryFailed) {
  std::map<std::string, std::string> status;
  for (const json& e : kiln::sweep::latestByKey(log.entries))
    status[e.value("key", "")] = e.value("status", "");
  std::vector<int> pending;
  for (int i = 0; i < sweep.count(); ++i) {
    const auto it = status.find(sweep.configuration(i).value("key", ""));
    if (it == status.end() ||
        (retryFailed && (it->second == "failed" || it->second == "cancelled")))
      pending.push_back(i);
  }
  return pending;
}

// Results a killed sweep's tasks wrote but the log does not hold yet: logged, not run
// again. (A configuration the log holds as failed is pending only for --retry-failed.)
std::vector<int> collectFinished(const SweepContext& sweep, const kiln::sweep::Log& log,
                                 const std::vector<int>& pending) {
  std::set<std::string> logged;
  for (const json& e : log.entries) logged.insert(e.value("key", ""));
  std::vector<int> left;
  for (int i : pending) {
    if (logged.count(sweep.configuration(i).value("key", ""))) {
      left.push_back(i);
      continue;
    }
    auto text = readRegularFile(sweep.resultPath(i), kMaxTextFileBytes);
    const json result = text.isOk() ? json::parse(*text, nullptr, false) : json();
    if (!result.is_object() || result.value("key", "") != sweep.configuration(i).value("key", "") ||
        !sweep::recordResult(sweep, i, {{"collected", true}}, json::object()).isOk())
      left.push_back(i);
  }
  return left;
}

// The failed and cancelled configurations with where to look: a Slurm task's job id,
// state and log file, or a local task's log.
std::string unfinishedTasks(const std::vector<json>& entries) {
  std::string out;
  for (const json& e : entries) {
    const std::string status = e.value("status", "");
    if (status != "failed" && status != "cancelled") continue;
    const json slurm = e.value("slurm", json::object());
    char row[1024];
    if (!slurm.empty())
      std::snprintf(row, sizeof row, "  %-12s %-10s log: %s  %s\n", slurm.value("job", "").c_str(),
                    slurm.value("state", "").c_str(), slurm.value("log", "").c_str(),
                    e.value("key", "").c_str());
    else
      std::snprintf(row, sizeof row, "  [%d] %-9s log: %s  %s\n", e.value("index", -1),
                    status.c_str(), e.value("task_log", "").c_str(), e.value("key", "").c_str());
    out += row;
  }
  return out.empty() ? out
                     : "\nfailed or cancelled (--continue --retry-failed runs them again):\n" + out;
}

int report(const Args& args, const SweepContext& sweep) {
  auto log = kiln::sweep::readLog(sweep.logPath);
  if (!log.isOk()) return fail("sweep", log.status().message());
  std::set<std::string> keys;
  for (const json& c : sweep.tasks["configurations"]) keys.insert(c.value("key", ""));
  std::vector<json> entries;
  for (const json& e : kiln::sweep::latestByKey(log->entries))
    if (keys.count(e.value("key", ""))) entries.push_back(e);
  std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    return a.value("index", 0) < b.value("index", 0);
  });
  const auto front = kiln::sweep::paretoFront(entries, sweep.gate);
  if (args.flag("json")) {
    json out = {{"log", sweep.logPath}, {"configurations", entries}, {"pareto", json::array()}};
    for (const json& e : front) out["pareto"].push_back(e.value("key", ""));
    if (!front.empty()) out["best"] = front.front();
    std::printf("%s\n", out.dump(1, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    printReportText(kiln::sweep::formatTable(entries));
    std::printf("\n");
    printReportText(kiln::sweep::formatPareto(front, sweep.gate));
    if (!front.empty())
      printReportText("\nbest (fastest accepted): " + front.front().value("key", "") + "\n  " +
                      front.front().value("command", "") + "\n");
    printReportText(unfinishedTasks(entries));
    std::printf("log: %s (%zu of %d configurations)\n", sweep.logPath.c_str(), entries.size(),
                sweep.count());
  }
  return front.empty() ? 3 : 0;
}

int runSweep(const Args& args) {
  const std::string model = args.positional()[0];
  if (!args.has("max-error"))
    return fail("sweep", "--max-error SPEC is required (e.g. cosine>=0.999)", 2);
  if (auto gate = kiln::sweep::parseGate(args.value("max-error")); !gate.isOk())
    return fail("sweep", gate.status().message(), 2);
  if (!fs::is_regular_file(model)) return fail("sweep", model + ": no such model file");
  const std::string dir = absolute(args.value("dir", fs::path(model).stem().string() + ".sweep"));
  const std::string logPath = absolute(args.value("log", dir + "/sweep.jsonl"));
  std::vector<kiln::sweep::Configuration> configurations;
  auto tasks = prepareTasks(args, dir, &configurations);
  if (!tasks.isOk()) return fail("sweep", tasks.status().message(), 2);
  auto log = kiln::sweep::readLog(logPath);
  if (!log.isOk()) return fail("sweep", log.status().message());
  if (!log->entries.empty() && !args.flag("continue"))
    return fail("sweep",
                logPath + " already holds " + std::to_string(log->entries.size()) +
                    " configurations: --continue resumes the sweep, or remove it",
                2);
  if (log->skippedLines > 0)
    std::fprintf(stderr,
                 "kiln sweep: %s: skipped %d unreadable line(s) (a sweep killed while writing)\n",
                 logPath.c_str(), log->skippedLines);
  std::error_code error;
  fs::create_directories(dir + "/configs", error);
  if (error) return fail("sweep", dir + ": cannot create (" + error.message() + ")");
  if (Status s = writeTasks(args, dir, *tasks); !s.isOk()) return fail("sweep", s.message(), 2);
  auto sweep = sweep::loadSweep(dir, logPath);
  if (!sweep.isOk()) return fail("sweep", sweep.status().message());
  std::vector<int> pending = pendingConfigurations(*sweep, *log, args.flag("retry-failed"));
  if (args.flag("continue")) pending = collectFinished(*sweep, *log, pending);
  std::fprintf(stderr, "kiln sweep: %d configurations, %zu to run, %zu in %s\n", sweep->count(),
               pending.size(), sweep->count() - pending.size(), logPath.c_str());
  bool int8Pending = false;
  for (int i : pending)
    int8Pending |= sweep->configuration(i)["values"].value("precision", "") == "int8";
  if (int8Pending && !args.has("calib-cache")) {
    if (Status s = calibrateOnce(args, (*tasks)["kiln"], dir + "/calib.cache"); !s.isOk())
      return fail("sweep", s.message());
  }
  sweep::installInterruptHandlers();
  int code = 0;
  if (args.flag("slurm")) {
    sweep::SlurmOptions options{args.value("partition"), args.value("gres"), args.value("time")};
    int64_t arrayMax;
    if (Status s = args.intValue("array-max", 0, &arrayMax); !s.isOk())
      return fail("sweep", s.message(), 2);
    options.arrayMax = static_cast<int>(arrayMax);
    for (Status s : {args.doubleValue("poll", 10, &options.pollSeconds),
                     args.doubleValue("max-wait", 0, &options.maxWaitSeconds)})
      if (!s.isOk()) return fail("sweep", s.message(), 2);
    options.resume = args.flag("continue");
    code = sweep::runSlurm(*sweep, pending, options);
  } else {
    int64_t jobs;
    if (Status s = args.intValue("jobs", 1, &jobs); !s.isOk() || jobs < 1 || jobs > 256)
      return fail("sweep", "--jobs takes 1..256", 2);
    code = sweep::runLocal(*sweep, pending, static_cast<int>(jobs));
  }
  if (code == 130) {
    std::fprintf(
        stderr,
        "kiln sweep: interrupted; resume with --continue (finished configurations are in %s)\n",
        logPath.c_str());
    return 130;
  }
  const int reported = report(args, *sweep);
  return code != 0 ? code : reported;
}

}  // namespace

int runSweep(const std::vector<std::string>& argv) {
  Args args(
      {"vary",          "max-error",   "backend",     "min-shapes", "opt-shapes", "max-shapes",
       "accuracy-data", "preprocess",  "load-inputs", "shapes",     "seed",       "calib-cache",
       "calib-data",    "iterations",  "dir",         "log",        "jobs",       "task",
       "task-delay",    "partition",   "gres",        "time",       "array-max",  "poll",
       "max-wait",      "shape-sweep", "tolerance",   "precision"},
      {"continue", "retry-failed", "slurm", "json"});
  Status parsed = args.parse(argv);
  if (!parsed.isOk()) return fail("sweep", parsed.message(), 2);
  if (args.has("task")) {
    int64_t index;
    if (Status s = args.intValue("task", 0, &index); !s.isOk() || args.positional().size() != 1)
      return fail("sweep", "--task K DIR: a configuration index and the sweep folder", 2);
    sweep::installInterruptHandlers();
    return sweep::runTask(absolute(args.positional()[0]), static_cast<int>(index));
  }
  if (args.positional().size() != 1) return printUsage(kSweepUsage, 2);
  if (args.has("shape-sweep")) return runShapeSweep(args);
  return runSweep(args);
}

}  // namespace kiln::cli
