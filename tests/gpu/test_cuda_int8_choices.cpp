// The choices a channels-last INT8 convolution makes on the GPU and where they travel:
// the cuDNN plan records (reused by another engine, carried by a plan file, damaged ones
// dropped), the race of cuDNN's plan against cuBLASLt's GEMM and Kiln's MMA kernel, and
// the layer's choice that an engine made from a plan runs without timing (issue 23).
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "backends/cuda/ops/cudnn_plan_cache.h"
#include "backends/cuda/ops/nvrtc_module.h"
#include "gpu/int8_conv_test.h"
#include "kiln/cuda_generated_kernels.h"
#include "kiln/cuda_runtime.h"

namespace kiln::test {
namespace {

// The cuDNN plan a channels-last INT8 layer chose is reused: another engine sharing the
// compiled code builds it again without timing ("chosen earlier"), one with code of its own
// times again; the records, handed to fresh code as a plan's entries, give "from the plan
// file"; the outputs keep their bits. A damaged record is dropped and the layer times its
// candidates again.
TEST(CudaInt8, ChosenCudnnPlansAreReusedAndTravelInThePlan) {
  KILN_REQUIRE_GPU();
  const GpuOpTest t = channelsLastInt8Conv(true, Residual::kInt8);
  const Network net = t.network();
  auto code = std::make_shared<cuda::CompiledCode>();
  auto run = [&](const char* expected, std::shared_ptr<cuda::CompiledCode> in) {
    return runOneGpuLayer(t, net, expected, std::move(in));
  };
  const Tensor first = run("; timed {", code);
  const std::string layer = net.graph.nodes[0].displayName();
  expectTensorNear(run("; chosen earlier", code), first, 0, 0);
  expectTensorNear(run("; timed {", nullptr), first, 0, 0);  // nothing shared: no record
  std::vector<GeneratedKernelBinary> entries = code->cudnnRecordsForLayers({layer});
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_NE(entries[0].key.find(":cudnn-plan:"), std::string::npos) << entries[0].key;
  EXPECT_EQ(entries[0].layers, std::vector<std::string>{layer});
  EXPECT_TRUE(code->cudnnRecordsForLayers({"another layer"}).empty());

  auto fromPlan = std::make_shared<cuda::CompiledCode>();  // what engineOptionsForPlan makes
  fromPlan->preload(entries);
  expectTensorNear(run("; from the plan file", fromPlan), first, 0, 0);

  GeneratedKernelBinary damaged = entries[0];
  damaged.cubin.resize(damaged.cubin.size() / 2);
  auto fromDamaged = std::make_shared<cuda::CompiledCode>();
  fromDamaged->preload({damaged});
  expectTensorNear(run("; timed {", fromDamaged), first, 0, 0);
}

// The race of a 1x1 layer's cuDNN plan against Kiln's kernel and cuBLASLt's GEMM runs
// once: a second engine sharing the code, and fresh code given the plan's entries, take the
// recorded winner without timing, with the same output bits. A record whose race
// Kiln's kernel won loads without cuDNN's plan; one that cuDNN won restores it.
TEST(CudaInt8, RaceWinnerIsRecordedAndTravelsInThePlan) {
  KILN_REQUIRE_GPU();
  const GpuOpTest t =
      int8EpilogueConv({2, 5, 7, 128}, {256, 1, 1, 128}, 1, 0, true, {2, 5, 7, 256});
  const Network net = t.network();
  auto code = std::make_shared<cuda::CompiledCode>();
  auto run = [&](const char* expected, std::shared_ptr<cuda::CompiledCode> in) {
    return runOneGpuLayer(t, net, expected, std::move(in));
  };
  const Tensor first = run("; vs cudnn ", code);
  expectTensorNear(run(" won the race", code), first, 0, 0);
  const std::vector<GeneratedKernelBinary> entries =
      code->cudnnRecordsForLayers({net.graph.nodes[0].displayName()});
  ASSERT_EQ(entries.size(), 1u);
  auto fromPlan = std::make_shared<cuda::CompiledCode>();
  fromPlan->preload(entries);
  expectTensorNear(run(" won the race", fromPlan), first, 0, 0);

  // The same record with each winner in turn (the kernels' float epilogues may round a
  // value a step apart from the first run's winner).
  cuda::CudnnPlanRecord record;
  ASSERT_TRUE(cuda::decodeCudnnPlanRecord(entries[0].cubin, &record));
  for (const char* winner : {"mma:128x128", "cudnn"}) {
    SCOPED_TRACE(winner);
    record.raceWinner = winner;
    std::vector<GeneratedKernelBinary> edited = entries;
    edited[0].cubin = cuda::encodeCudnnPlanRecord(record);
    auto editedCode = std::make_shared<cuda::CompiledCode>();
    editedCode->preload(edited);
    const bool kiln = std::string(winner) != "cudnn";
    const Tensor out = run(kiln ? "; from the plan file, cuDNN's plan not restored (timed then {"
                                : "; from the plan file, serialized (timed then {",
                           editedCode);
    expectTensorNear(out, first, 1, 0);
    std::vector<GeneratedKernelBinary> again =
        editedCode->cudnnRecordsForLayers({net.graph.nodes[0].displayName()});
    ASSERT_EQ(again.size(), 1u);  // the record stays for the next save of the plan
    EXPECT_EQ(again[0].cubin, edited[0].cubin);
  }
}

// Tactics as data (issue 23): the race's winner is the layer's choice ("mma:<tile>",
// "gemm", or "cudnn" with cuDNN's engine configuration); an engine given that choice, as
// one made from a plan is, runs it without timing and without any record of this
// process, and computes what the race's winner did. Each winner given in turn runs; one
// that does not apply (cuBLASLt's GEMM on a 3x3 layer) is said so and the layer races.
TEST(CudaInt8, PlannedChoiceRunsWithoutTiming) {
  KILN_REQUIRE_GPU();
  for (bool pointwise : {true, false}) {
    SCOPED_TRACE(pointwise ? "1x1" : "3x3");
    const GpuOpTest t =
        pointwise ? int8EpilogueConv({2, 5, 7, 128}, {256, 1, 1, 128}, 1, 0, true, {2, 5, 7, 256})
                  : int8EpilogueConv({2, 9, 9, 64}, {64, 3, 3, 64}, 1, 1, true, {2, 9, 9, 64});
    const Network net = t.network();
    auto code = std::make_shared<cuda::CompiledCode>();
    std::vector<cuda::LayerInfo> layers;
    auto first =
        runCudaPoisoned(net, t.feeds(), cuda::Precision::kFloat16, "out0", &layers, true, {}, code);
    ASSERT_TRUE(first.isOk()) << first.status().toString();
    ASSERT_EQ(layers.size(), 1u);
    const cuda::LayerInfo built = layers[0];
    std::cout << "  " << built.implementation << "\n    choice '" << built.choice << "'\n";
    ASSERT_FALSE(built.choice.empty()) << built.implementation;
    EXPECT_NE(built.implementation.find("; vs cudnn "), std::string::npos) << built.implementation;
    // cuDNN's engine as the race found it: from the record the engine's code keeps.
    const std::string cudnn = recordedCudnnChoice(*code, built.name);
    ASSERT_FALSE(cudnn.empty());
    std::vector<std::string> planned = {built.choice, cudnn,
                                        pointwise ? "mma:128x128" : "mma:128x64"};
    for (const std::string& choice : planned) {
      SCOPED_TRACE(choice);  // each engine with code of its own: no record
      auto out = runCudaPoisoned(net, t.feeds(), cuda::Precision::kFloat16, "out0", &layers, false,
                                 {{built.name, choice}});
      ASSERT_TRUE(out.isOk()) << out.status().toString();
      const std::string& text = layers[0].implementation;
      EXPECT_NE(text.find("; the plan's choice: " + choice), std::string::npos) << text;
      EXPECT_EQ(text.find("vs cudnn"), std::string::npos) << text;
      EXPECT_EQ(text.find("timed"), std::string::npos) << text;
      EXPECT_EQ(layers[0].choice, choice);
      expectTensorNear(out.value(), first.value(), choice == built.choice ? 0 : 1, 0);
    }
    if (!pointwise) {
      auto raced = runCudaPoisoned(net, t.feeds(), cuda::Precision::kFloat16, "out0", &layers, true,
                                   {{built.name, "gemm"}});
      ASSERT_TRUE(raced.isOk()) << raced.status().toString();
      const std::string& text = layers[0].implementation;
      EXPECT_NE(text.find("; the plan's choice 'gemm' does not apply here: "), std::string::npos)
          << text;
      EXPECT_NE(text.find("vs cudnn"), std::string::npos) << text;
      expectTensorNear(raced.value(), first.value(), 1, 0);
    }
  }
}

// A plan record's bytes keep the race's winner and times; a record written before
// the race was recorded (no "race" line) still reads.
TEST(CudaInt8, PlanRecordBytesKeepTheRace) {
  cuda::CudnnPlanRecord record;
  record.choice.engine = 4;
  record.choice.runtimeCompiled = true;
  record.choice.knobs = {{3, 1}, {7, 2}};
  record.timings = "engine 4 rtc=0.1ms";
  record.raceWinner = "mma:128x128";
  record.raceTimings = "vs cudnn 0.3ms, kiln MMA 128x128 0.2ms";
  record.json = "{\"plan\": 1}\nsecond line";
  cuda::CudnnPlanRecord back;
  ASSERT_TRUE(cuda::decodeCudnnPlanRecord(cuda::encodeCudnnPlanRecord(record), &back));
  EXPECT_EQ(back.raceWinner, record.raceWinner);
  EXPECT_EQ(back.raceTimings, record.raceTimings);
  EXPECT_EQ(back.json, record.json);
  EXPECT_EQ(back.timings, record.timings);
  EXPECT_EQ(back.choice.knobs, record.choice.knobs);
  record.raceWinner.clear();
  ASSERT_TRUE(cuda::decodeCudnnPlanRecord(cuda::encodeCudnnPlanRecord(record), &back));
  EXPECT_TRUE(back.raceWinner.empty());
  EXPECT_EQ(back.json, record.json);
  std::vector<char> cut = cuda::encodeCudnnPlanRecord(record);
  cut.resize(cut.size() - 3);
  EXPECT_FALSE(cuda::decodeCudnnPlanRecord(cut, &back));
}

// No process-wide registries (issue 23), without a GPU: the cuDNN records a plan carries
// live in the CompiledCode they are given, one engine's apart from another's; an entry is
// kept for the layers it names, a damaged one dropped, a cubin kept unloaded (binaries()
// lists what was compiled or loaded only).
TEST(CompiledCode, EachObjectKeepsTheEntriesItWasGiven) {
  cuda::CudnnPlanRecord record;
  record.choice.engine = 12;
  record.choice.knobs = {{2, 5}, {13, 1}};
  record.timings = "12=0.01ms";
  GeneratedKernelBinary entry;
  entry.architecture = "sm_90";
  entry.key = std::string("sm_90") + cuda::kCudnnPlanKeyTag + "00000000000000aa";
  entry.layers = {"conv_a"};
  entry.cubin = cuda::encodeCudnnPlanRecord(record);
  GeneratedKernelBinary damaged = entry;
  damaged.key = std::string("sm_90") + cuda::kCudnnPlanKeyTag + "00000000000000bb";
  damaged.layers = {"conv_b"};
  damaged.cubin.resize(damaged.cubin.size() / 2);
  GeneratedKernelBinary cubin;
  cubin.architecture = "sm_90";
  cubin.key = "sm_90:0123456789abcdef:100";
  cubin.layers = {"PWN(x)"};
  cubin.cubin = std::vector<char>(100, 'c');

  cuda::CompiledCode plan, other;
  plan.preload({entry, damaged, cubin});
  const std::vector<GeneratedKernelBinary> kept = plan.cudnnRecordsForLayers({"conv_a", "conv_b"});
  ASSERT_EQ(kept.size(), 1u);  // the damaged record is dropped
  EXPECT_EQ(kept[0].key, entry.key);
  EXPECT_EQ(kept[0].layers, std::vector<std::string>{"conv_a"});
  cuda::CudnnPlanRecord back;
  ASSERT_TRUE(cuda::decodeCudnnPlanRecord(kept[0].cubin, &back));
  EXPECT_EQ(back.choice.engine, 12);
  EXPECT_EQ(back.choice.knobs, record.choice.knobs);
  EXPECT_TRUE(plan.cudnnRecordsForLayers({"another layer"}).empty());
  EXPECT_TRUE(plan.binaries().empty()) << "a preloaded cubin is not loaded until a layer needs it";
  // Another engine's code holds nothing of it.
  EXPECT_TRUE(other.cudnnRecordsForLayers({"conv_a"}).empty());
  EXPECT_TRUE(other.binaries().empty());
}

}  // namespace
}  // namespace kiln::test
