// kilnBuildCommandLine(): the `kiln build` line the studio shows. Each test splits
// the line as a POSIX shell would and parses it back with the CLI's own option
// parser (app/cli/build_options.cpp), which must give the config it came from.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/build_options.h"
#include "kiln/builder.h"

namespace kiln::test {
namespace {

// Splits a command line as sh does for the quoting kilnBuildCommandLine() uses:
// blanks separate words, single quotes keep everything, a backslash escapes one
// character outside quotes.
std::vector<std::string> shellSplit(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false, quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '\'')
        quoted = false;
      else
        word += c;
    } else if (c == '\'') {
      quoted = inWord = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
      inWord = true;
    } else if (c == ' ') {
      if (inWord) words.push_back(word);
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote in: " << line;
  if (inWord) words.push_back(word);
  return words;
}

struct Parsed {
  cli::Args args{cli::buildValuedOptions(), cli::buildFlagOptions()};
  BuilderConfig config;
};

// Parses `line` ("kiln build MODEL -o PLAN ...") as runBuild() does.
void parseBack(const std::string& line, Parsed* parsed) {
  std::vector<std::string> words = shellSplit(line);
  ASSERT_GE(words.size(), 3u) << line;
  EXPECT_EQ(words[0], "kiln");
  EXPECT_EQ(words[1], "build");
  std::vector<std::string> argv(words.begin() + 2, words.end());
  for (std::string& a : argv)
    if (a == "-o") a = "--output";
  Status s = parsed->args.parse(argv);
  ASSERT_TRUE(s.isOk()) << s.toString() << "\n" << line;
  s = cli::builderConfigFromArgs(parsed->args, &parsed->config);
  ASSERT_TRUE(s.isOk()) << s.toString() << "\n" << line;
}

void expectRulesEqual(const std::vector<LayerPrecisionRule>& a,
                      const std::vector<LayerPrecisionRule>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].pattern, b[i].pattern);
    EXPECT_EQ(a[i].precision, b[i].precision) << a[i].pattern;
  }
}

void expectProfilesEqual(const std::vector<OptimizationProfile>& a,
                         const std::vector<OptimizationProfile>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t p = 0; p < a.size(); ++p) {
    ASSERT_EQ(a[p].inputs.size(), b[p].inputs.size()) << "profile " << p;
    for (const auto& [name, range] : a[p].inputs) {
      ASSERT_TRUE(b[p].inputs.count(name)) << name;
      EXPECT_EQ(range.min, b[p].inputs.at(name).min) << name;
      EXPECT_EQ(range.opt, b[p].inputs.at(name).opt) << name;
      EXPECT_EQ(range.max, b[p].inputs.at(name).max) << name;
    }
  }
}

void expectConfigsEqual(const BuilderConfig& a, const BuilderConfig& b) {
  EXPECT_EQ(a.tf32, b.tf32);
  EXPECT_EQ(a.fp16, b.fp16);
  EXPECT_EQ(a.bf16, b.bf16);
  EXPECT_EQ(a.int8, b.int8);
  EXPECT_EQ(a.fp8, b.fp8);
  EXPECT_EQ(a.precisionConstraints, b.precisionConstraints);
  expectRulesEqual(a.layerPrecisions, b.layerPrecisions);
  expectRulesEqual(a.layerOutputTypes, b.layerOutputTypes);
  EXPECT_EQ(a.optimizationLevel, b.optimizationLevel);
  EXPECT_EQ(a.workspaceLimitBytes, b.workspaceLimitBytes);
  EXPECT_EQ(a.tacticSources, b.tacticSources);
  EXPECT_EQ(a.profilingVerbosity, b.profilingVerbosity);
  EXPECT_EQ(a.disabledPasses, b.disabledPasses);
  EXPECT_EQ(a.seed, b.seed);
  expectProfilesEqual(a.profiles, b.profiles);
}

BuilderConfig everythingChanged() {
  BuilderConfig config;
  config.tf32 = false;
  config.fp16 = true;
  config.bf16 = true;
  config.precisionConstraints = ConstraintMode::kObey;
  config.layerPrecisions = parseLayerPrecisionSpec("*:fp16,q_matmul:fp32,ln out:bf16").value();
  config.layerOutputTypes = parseLayerPrecisionSpec("softmax:fp32").value();
  OptimizationProfile small, large;
  small.inputs["input_ids"] = {{1, 4}, {2, 8}, {4, 16}};
  small.inputs["mask"] = {{1, 4}, {2, 8}, {4, 16}};
  large.inputs["input_ids"] = {{8, 64}, {16, 128}, {32, 256}};
  large.inputs["mask"] = {{8, 64}, {16, 128}, {32, 256}};
  config.profiles = {small, large};
  config.optimizationLevel = 5;
  config.workspaceLimitBytes = int64_t{256} << 20;
  config.tacticSources = kTacticKiln | kTacticCublasLt;
  config.profilingVerbosity = ProfilingVerbosity::kLayerNamesOnly;
  config.disabledPasses = {"fold_batch_norm", "fuse_matmul_bias"};
  config.seed = 42;
  return config;
}

TEST(KilnCommand, DefaultConfigIsTheShortestLine) {
  const std::string line = kilnBuildCommandLine(BuilderConfig{}, "m.onnx", "m.kiln", "cpu");
  EXPECT_EQ(line, "kiln build m.onnx -o m.kiln --backend cpu");
  Parsed parsed;
  parseBack(line, &parsed);
  expectConfigsEqual(parsed.config, BuilderConfig{});
  EXPECT_EQ(parsed.args.value("backend"), "cpu");
}

TEST(KilnCommand, EverySettingParsesBackToTheSameConfig) {
  const BuilderConfig config = everythingChanged();
  const std::string line = kilnBuildCommandLine(config, "/models/my model.onnx", "out/b.kiln",
                                                "cuda", "/tmp/cache's.json");
  for (const char* part :
       {"--fp16", "--bf16", "--no-tf32", "--precision-constraints obey", "--optimization-level 5",
        "--workspace 256", "--profiling-verbosity layer_names_only", "--seed 42",
        "--disable-pass fold_batch_norm", "--backend cuda"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " missing in: " << line;
  Parsed parsed;
  parseBack(line, &parsed);
  expectConfigsEqual(parsed.config, config);
  ASSERT_EQ(parsed.args.positional().size(), 1u);
  EXPECT_EQ(parsed.args.positional()[0], "/models/my model.onnx");
  EXPECT_EQ(parsed.args.value("output"), "out/b.kiln");
  EXPECT_EQ(parsed.args.value("backend"), "cuda");
  EXPECT_EQ(parsed.args.value("timing-cache"), "/tmp/cache's.json");
  // Two profiles: two triples, in order.
  EXPECT_EQ(parsed.args.values("opt-shapes"),
            (std::vector<std::string>{"input_ids:2x8,mask:2x8", "input_ids:16x128,mask:16x128"}));
}

TEST(KilnCommand, RulesWithoutAModeKeepNone) {
  // The CLI reads rules without --precision-constraints as "prefer"; a config that
  // says none must say so on the line.
  BuilderConfig config;
  config.layerPrecisions = parseLayerPrecisionSpec("scores:fp16").value();
  const std::string line = kilnBuildCommandLine(config, "m.onnx", "m.kiln", "cpu");
  EXPECT_NE(line.find("--precision-constraints none --layer-precisions scores:fp16"),
            std::string::npos)
      << line;
  Parsed parsed;
  parseBack(line, &parsed);
  EXPECT_EQ(parsed.config.precisionConstraints, ConstraintMode::kNone);
  expectRulesEqual(parsed.config.layerPrecisions, config.layerPrecisions);
}

TEST(KilnCommand, WildcardAndQuotesAreShellSafe) {
  BuilderConfig config;
  config.precisionConstraints = ConstraintMode::kPrefer;
  config.layerPrecisions = parseLayerPrecisionSpec("*:fp16,it's:fp32").value();
  const std::string line = kilnBuildCommandLine(config, "a b.onnx", "$HOME.kiln", "cpu");
  // The star, the blank, the dollar and the quote are all inside single quotes.
  EXPECT_NE(line.find("'*:fp16,it'\\''s:fp32'"), std::string::npos) << line;
  EXPECT_NE(line.find("'a b.onnx'"), std::string::npos) << line;
  EXPECT_NE(line.find("'$HOME.kiln'"), std::string::npos) << line;
  Parsed parsed;
  parseBack(line, &parsed);
  expectRulesEqual(parsed.config.layerPrecisions, config.layerPrecisions);
  EXPECT_EQ(parsed.args.value("output"), "$HOME.kiln");
}

TEST(KilnCommand, EmptyProfilesAreLeftOut) {
  BuilderConfig config;
  config.profiles.resize(1);  // a fixed-shape network's profile names no input
  const std::string line = kilnBuildCommandLine(config, "m.onnx", "m.kiln", "cpu");
  EXPECT_EQ(line.find("shapes"), std::string::npos) << line;
}

}  // namespace
}  // namespace kiln::test
