// `kiln build --help` and `kiln sweep --help` state the defaults an option not given
// leaves. Those are BuilderConfig's own (kiln/builder_config.h), which the CLI's
// option parser and kilnBuildCommandLine() both read (tests/engine/builder/
// test_kiln_command.cpp parses the rendered line back), and the CLI's build backend.
#include <gtest/gtest.h>

#include <string>

#include "cli/build_options.h"
#include "cli/commands.h"
#include "kiln/builder_config.h"

namespace kiln::cli {
namespace {

TEST(BuildUsage, StatesBuilderConfigDefaults) {
  const BuilderConfig defaults;
  const std::string usage = kBuildUsage;
  for (const std::string& part :
       {"--backend cpu|cuda (" + std::string(kDefaultBuildBackend) + ")",
        "--optimization-level 0..5 (" + std::to_string(defaults.optimizationLevel) + ")",
        "--workspace MiB (" + std::to_string(defaults.workspaceLimitBytes >> 20) + ")",
        "--seed N (" + std::to_string(defaults.seed) + ")",
        "--profiling-verbosity none|layer_names_only|detailed (" +
            std::string(profilingVerbosityName(defaults.profilingVerbosity)) + ")"})
    EXPECT_NE(usage.find(part), std::string::npos) << "'" << part << "' is not in:\n" << usage;
}

TEST(BuildUsage, SweepStatesTheBuildBackend) {
  const std::string part = "--backend cpu|cuda (" + std::string(kDefaultBuildBackend) + ")";
  EXPECT_NE(std::string(kSweepUsage).find(part), std::string::npos) << kSweepUsage;
}

// What the parser leaves for options not given is the default, whatever a caller's
// config held before: the parser's contract is a default config in, the options applied.
TEST(BuildOptions, OptionsNotGivenAreBuilderConfigDefaults) {
  Args args(buildValuedOptions(), buildFlagOptions());
  ASSERT_TRUE(args.parse({"m.onnx", "--output", "m.kiln"}).isOk());
  BuilderConfig config;
  config.optimizationLevel = 5;  // poisoned: the parser must set each one
  config.workspaceLimitBytes = 7;
  config.seed = 99;
  config.tacticSources = kTacticKiln;
  config.profilingVerbosity = ProfilingVerbosity::kNone;
  ASSERT_TRUE(builderConfigFromArgs(args, &config).isOk());
  const BuilderConfig defaults;
  EXPECT_EQ(config.optimizationLevel, defaults.optimizationLevel);
  EXPECT_EQ(config.workspaceLimitBytes, defaults.workspaceLimitBytes);
  EXPECT_EQ(config.seed, defaults.seed);
  EXPECT_EQ(config.tacticSources, defaults.tacticSources);
  EXPECT_EQ(config.profilingVerbosity, defaults.profilingVerbosity);
}

}  // namespace
}  // namespace kiln::cli
