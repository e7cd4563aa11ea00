// Slurm's word on a sweep's job array (inspector/sweep_slurm_states.h): squeue and sacct
// lines as Slurm 23/24 print them, the five phases, and the states file the tracking
// sweep writes for the studio.
#include <gtest/gtest.h>

#include "sweep_slurm_states.h"

namespace kiln::sweep {
namespace {

TEST(SlurmStates, ParsesSqueueLines) {
  // squeue -h -r -t all -j 77 -o '%K|%T': index and state.
  const auto states = parseSlurmStates("0|COMPLETED\n1|RUNNING\n2|PENDING\n12|CANCELLED\n");
  const std::map<int, std::string> expected = {
      {0, "COMPLETED"}, {1, "RUNNING"}, {2, "PENDING"}, {12, "CANCELLED"}};
  EXPECT_EQ(states, expected);
}

TEST(SlurmStates, ParsesSacctLines) {
  // sacct -n -P -X -j 77 -o JobID,State: ids JOB_INDEX, "CANCELLED by UID", the array's
  // pending range and a trailing carriage return or blank are not tasks.
  const auto states = parseSlurmStates(
      "77_0|COMPLETED\n77_1|FAILED\r\n77_2|CANCELLED by 1000\n77_[3-5%1]|PENDING\n"
      "77_6|TIMEOUT \n\nJobID|State\n|RUNNING\n77_x|RUNNING\n77_99999999999|RUNNING\n");
  const std::map<int, std::string> expected = {
      {0, "COMPLETED"}, {1, "FAILED"}, {2, "CANCELLED"}, {6, "TIMEOUT"}};
  EXPECT_EQ(states, expected);
  EXPECT_TRUE(parseSlurmStates("").empty());
  EXPECT_TRUE(parseSlurmStates("squeue: error: Invalid job id specified\n").empty());
}

TEST(SlurmStates, PhasesOfEveryState) {
  struct Case {
    const char* state;
    TaskPhase phase;
  };
  const Case cases[] = {
      {"PENDING", TaskPhase::kQueued},      {"REQUEUED", TaskPhase::kQueued},
      {"REQUEUE_HOLD", TaskPhase::kQueued}, {"RUNNING", TaskPhase::kRunning},
      {"CONFIGURING", TaskPhase::kRunning}, {"COMPLETING", TaskPhase::kRunning},
      {"SUSPENDED", TaskPhase::kRunning},   {"STAGE_OUT", TaskPhase::kRunning},
      {"COMPLETED", TaskPhase::kCompleted}, {"CANCELLED", TaskPhase::kCancelled},
      {"FAILED", TaskPhase::kFailed},       {"TIMEOUT", TaskPhase::kFailed},
      {"NODE_FAIL", TaskPhase::kFailed},    {"OUT_OF_MEMORY", TaskPhase::kFailed},
      {"BOOT_FAIL", TaskPhase::kFailed},    {"PREEMPTED", TaskPhase::kFailed},
      {"UNKNOWN", TaskPhase::kFailed},      {"SOMETHING_NEW", TaskPhase::kFailed}};
  for (const Case& c : cases) {
    EXPECT_EQ(slurmPhase(c.state), c.phase) << c.state;
    const bool active = c.phase == TaskPhase::kQueued || c.phase == TaskPhase::kRunning;
    EXPECT_EQ(slurmActive(c.state), active) << c.state;
  }
}

TEST(SlurmStates, FileRoundTrip) {
  const SlurmStates states{
      "77", 1764400000, 10, {{0, "COMPLETED"}, {2, "PENDING"}, {11, "RUNNING"}}};
  const nlohmann::json json = slurmStatesJson(states);
  EXPECT_EQ(json["tasks"]["11"], "RUNNING");
  EXPECT_EQ(json["job"], "77");
  const auto back = slurmStatesFromJson(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value(), states);
}

TEST(SlurmStates, MalformedFilesAreRefused) {
  for (const char* text :
       {"null", "[]", R"({"job": 77, "updated": 1, "tasks": {}})", R"({"job": "77", "tasks": {}})",
        R"({"job": "77", "updated": 1, "tasks": {"a": "RUNNING"}})",
        R"({"job": "77", "updated": 1, "tasks": {"-1": "RUNNING"}})",
        R"({"job": "77", "updated": 1, "tasks": {"1": 3}})"}) {
    const auto parsed = slurmStatesFromJson(nlohmann::json::parse(text));
    EXPECT_FALSE(parsed.isOk()) << text;
  }
}

TEST(SlurmStates, StaleWhenTheSweepStoppedPolling) {
  const SlurmStates states{"77", 1000, 10, {}};
  EXPECT_TRUE(slurmStatesCurrent(states, 1000));
  EXPECT_TRUE(slurmStatesCurrent(states, 1060));  // three polls and 30 s of slack
  EXPECT_FALSE(slurmStatesCurrent(states, 1061));
}

}  // namespace
}  // namespace kiln::sweep
