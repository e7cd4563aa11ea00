// The plan's generated-kernel section (format version 2) without a GPU: a plan with
// cubins round-trips byte for byte, version 1 files still load, and every damaged
// count, length or architecture in the section is a one-line error naming the file,
// never a crash. The cubins here are stand-in bytes; the GPU test
// (tests/gpu/test_cuda_pointwise_chain.cpp) runs real ones.
#include <gtest/gtest.h>

#include <cstring>

#include "engine_inspector.h"
#include "common/fnv1a.h"
#include "ir/pointwise_program.h"
#include "kiln/builder.h"
#include "kiln/passes.h"
#include "kiln/plan.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

constexpr size_t kKernelsOffsetAt = 16 + 16 * 3;  // header field: section 3's offset
constexpr size_t kKernelsSizeAt = kKernelsOffsetAt + 8;
constexpr size_t kChecksumAt = kPlanHeaderBytes - 8;

uint64_t u64At(const std::string& bytes, size_t at) {
  uint64_t v;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

void putU64At(std::string& bytes, size_t at, uint64_t v) {
  std::memcpy(&bytes[at], &v, 8);
}

// sigmoid(x + b) * x, fused by the level-2 passes into one PointwiseChain layer.
std::shared_ptr<const Network> chainNetwork() {
  auto net = std::make_shared<Network>();
  net->opsets[""] = 17;
  ValueInfo x{"x", DataType::kFloat32, true, {}};
  x.shape = {DimExpr(2), DimExpr(8)};
  net->graph.inputs = {x};
  net->graph.initializers["b"] = floatTensor({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  net->graph.nodes = {makeNode("Add", {"x", "b"}, {"a"}), makeNode("Sigmoid", {"a"}, {"s"}),
                      makeNode("Mul", {"s", "x"}, {"out"})};
  net->graph.outputs = {{"out", DataType::kUndefined, false, {}}};
  return net;
}

GeneratedKernelBinary standIn(const std::string& layer, const std::string& source, size_t bytes) {
  GeneratedKernelBinary k;
  k.architecture = "sm_90";
  k.key = generatedKernelKey("sm_90", source);
  k.layers = {layer};
  for (size_t i = 0; i < bytes; ++i) k.cubin.push_back(static_cast<char>((i * 131 + 7) % 256));
  return k;
}

// A CPU build of chainNetwork() posing as a CUDA plan for sm_90 with two cubins.
Plan planWithKernels() {
  BuilderConfig config;
  config.optimizationLevel = 2;
  auto backend = cpuBuildBackend();
  auto built = buildPlan(chainNetwork(), config, *backend);
  EXPECT_TRUE(built.isOk()) << built.status().toString();
  Plan plan = std::move(built.value());
  EXPECT_EQ(plan.network->graph.nodes.size(), 1u);
  EXPECT_EQ(plan.network->graph.nodes[0].opType, kPointwiseChainOp);
  plan.identity = {"cuda", "NVIDIA H100 80GB HBM3", 9, 0, {{"cudnn", "91400"}}, "0.1.0"};
  const std::string layer = plan.network->graph.nodes[0].displayName();
  plan.generatedKernels = {standIn(layer, "extern \"C\" __global__ void a() {}", 1500),
                           standIn(layer, "extern \"C\" __global__ void b() {}", 77)};
  return plan;
}

std::string bytesOf(const Plan& plan) {
  auto bytes = serializePlan(plan);
  EXPECT_TRUE(bytes.isOk()) << bytes.status().toString();
  return bytes.isOk() ? bytes.value() : std::string();
}

// `bytes` with the generated-kernel section (the file's last) replaced by `section`
// and the checksum made right again, so only the section's own checks can refuse it.
std::string withKernelSection(std::string bytes, const std::string& section) {
  const uint64_t offset = u64At(bytes, kKernelsOffsetAt);
  bytes.resize(offset);
  bytes += section;
  putU64At(bytes, kKernelsSizeAt, section.size());
  putU64At(bytes, kChecksumAt,
           fnv1a64(bytes.data() + kPlanHeaderBytes, bytes.size() - kPlanHeaderBytes));
  return bytes;
}

std::string kernelSectionOf(const std::string& bytes) {
  return bytes.substr(u64At(bytes, kKernelsOffsetAt), u64At(bytes, kKernelsSizeAt));
}

void expectRefused(const std::string& bytes, const std::string& fragment) {
  auto plan = deserializePlan(bytes, "damaged.kiln");
  ASSERT_FALSE(plan.isOk()) << "accepted a plan that should fail with: " << fragment;
  const std::string& message = plan.status().message();
  EXPECT_EQ(message.rfind("damaged.kiln: generated-kernel section is damaged: ", 0), 0u) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(PlanGeneratedKernels, KeysAreShortAndFollowTheSource) {
  const std::string key = generatedKernelKey("sm_90", "source text");
  EXPECT_EQ(key.rfind("sm_90:", 0), 0u) << key;
  EXPECT_EQ(key.size(), std::string("sm_90:").size() + 16 + std::string(":11").size()) << key;
  EXPECT_EQ(key.substr(key.size() - 3), ":11");
  EXPECT_EQ(key, generatedKernelKey("sm_90", "source text"));
  EXPECT_NE(key, generatedKernelKey("sm_90", "source texT"));
  EXPECT_NE(key, generatedKernelKey("sm_89", "source text"));
  EXPECT_EQ(smArchitecture(8, 9), "sm_89");
}

TEST(PlanGeneratedKernels, RoundTripByteForByte) {
  const Plan plan = planWithKernels();
  const std::string bytes = bytesOf(plan);
  EXPECT_EQ(u64At(bytes, kKernelsOffsetAt) % kPlanWeightAlignment, 0u);
  auto loaded = deserializePlan(bytes, "kernels.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_EQ(loaded->generatedKernels.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const GeneratedKernelBinary& a = plan.generatedKernels[i];
    const GeneratedKernelBinary& b = loaded->generatedKernels[i];
    EXPECT_EQ(b.architecture, a.architecture);
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(b.layers, a.layers);
    EXPECT_EQ(b.cubin, a.cubin);  // every byte, zeros and high bytes included
  }
  EXPECT_EQ(bytesOf(loaded.value()), bytes);  // the whole file, written again
}

TEST(PlanGeneratedKernels, InspectorShowsCountBytesAndArchitecture) {
  const Plan plan = planWithKernels();
  const nlohmann::json doc = inspector::engineInspectorJson(plan);
  EXPECT_EQ(doc["GeneratedKernels"]["Count"], 2);
  EXPECT_EQ(doc["GeneratedKernels"]["Bytes"], 1577);
  EXPECT_EQ(doc["GeneratedKernels"]["Architecture"], "sm_90");
  EXPECT_EQ(doc["GeneratedKernels"]["Kernels"][1]["Key"], plan.generatedKernels[1].key);
  EXPECT_EQ(doc["Layers"][0]["GeneratedKernel"], "sm_90 cubin, 77 B, in the plan");
  const std::string summary = inspector::formatBuildSummary(plan);
  EXPECT_NE(
      summary.find(
          "generated kernels: 2 NVRTC cubin(s) and 0 cuDNN execution plan(s) for sm_90, 1.5 KiB"),
      std::string::npos)
      << summary;
  Plan none = plan;
  none.generatedKernels.clear();
  EXPECT_EQ(inspector::engineInspectorJson(none)["GeneratedKernels"]["Count"], 0);
  EXPECT_EQ(inspector::formatBuildSummary(none).find("generated kernels"), std::string::npos);
}

TEST(PlanGeneratedKernels, VersionOnePlansLoadWithoutKernels) {
  Plan plan = planWithKernels();
  plan.generatedKernels.clear();
  const std::string v2 = bytesOf(plan);
  // The same sections behind version 1's 72-byte header (three sections, no kernels).
  std::string v1(kPlanMagic, 8);
  const uint32_t version = 1, headerBytes = kPlanHeaderBytesV1;
  v1.append(reinterpret_cast<const char*>(&version), 4);
  v1.append(reinterpret_cast<const char*>(&headerBytes), 4);
  const uint64_t shift = kPlanHeaderBytes - kPlanHeaderBytesV1;
  for (int i = 0; i < 3; ++i) {
    const uint64_t offset = u64At(v2, 16 + 16 * i) - shift, size = u64At(v2, 24 + 16 * i);
    v1.append(reinterpret_cast<const char*>(&offset), 8);
    v1.append(reinterpret_cast<const char*>(&size), 8);
  }
  const std::string body = v2.substr(kPlanHeaderBytes);
  const uint64_t checksum = fnv1a64(body.data(), body.size());
  v1.append(reinterpret_cast<const char*>(&checksum), 8);
  v1 += body;
  auto loaded = deserializePlan(v1, "old.kiln");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_TRUE(loaded->generatedKernels.empty());
  EXPECT_EQ(loaded->layers.size(), plan.layers.size());
  EXPECT_EQ(bytesOf(loaded.value()), v2);  // written back as version 2
}

TEST(PlanGeneratedKernels, EveryTruncationOfTheSectionIsRefused) {
  const std::string bytes = bytesOf(planWithKernels());
  const std::string section = kernelSectionOf(bytes);
  ASSERT_GT(section.size(), 1577u);
  for (size_t size = 1; size < section.size(); size += size < 200 ? 1 : 97) {
    SCOPED_TRACE("section cut to " + std::to_string(size) + " bytes");
    expectRefused(withKernelSection(bytes, section.substr(0, size)), "");
  }
  // The header's size for the section runs past the file: refused before the section.
  std::string longer = bytes;
  putU64At(longer, kKernelsSizeAt, section.size() + 1);
  auto plan = deserializePlan(longer, "damaged.kiln");
  ASSERT_FALSE(plan.isOk());
  EXPECT_NE(plan.status().message().find("section 3 lies outside the file"), std::string::npos)
      << plan.status().message();
}

TEST(PlanGeneratedKernels, DamagedCountsAndLengthsAreRefused) {
  const std::string bytes = bytesOf(planWithKernels());
  const std::string section = kernelSectionOf(bytes);
  auto patched = [&](size_t at, const void* value, size_t size) {
    std::string s = section;
    std::memcpy(&s[at], value, size);
    return withKernelSection(bytes, s);
  };
  const uint32_t hugeCount = 0xffffffffu;
  expectRefused(patched(0, &hugeCount, 4), "entries cannot fit");
  expectRefused(patched(4, &hugeCount, 4), "entry 0's architecture");  // its length
  // Entry 0: count(4) arch(4 + 5) key(4 + n) layer count(4) ...
  const size_t keyLength = planWithKernels().generatedKernels[0].key.size();
  const size_t layersAt = 4 + 4 + 5 + 4 + keyLength;
  expectRefused(patched(layersAt, &hugeCount, 4), "layers, more than");
  const std::string layer = planWithKernels().generatedKernels[0].layers[0];
  const size_t cubinAt = layersAt + 4 + 4 + layer.size();
  const uint64_t hugeCubin = uint64_t{1} << 62;
  expectRefused(patched(cubinAt, &hugeCubin, 8), "entry 0's cubin (4611686018427387904 bytes)");
  const uint64_t emptyCubin = 0;
  std::string shifted = section.substr(0, cubinAt);
  shifted.append(reinterpret_cast<const char*>(&emptyCubin), 8);
  expectRefused(withKernelSection(bytes, shifted + section.substr(cubinAt + 8 + 1500)),
                "entry 0's cubin is empty");
  expectRefused(withKernelSection(bytes, section + "junk"), "4 bytes follow the last entry");
}

TEST(PlanGeneratedKernels, CubinsForAnotherDeviceAreRefused) {
  Plan plan = planWithKernels();
  plan.generatedKernels[1].architecture = "sm_80";
  expectRefused(bytesOf(plan), "entry 1 is compiled for 'sm_80', the plan's device is sm_90");
  plan = planWithKernels();
  plan.generatedKernels[0].key = generatedKernelKey("sm_80", "x");
  expectRefused(bytesOf(plan), "entry 0's key 'sm_80:");
  plan = planWithKernels();
  plan.identity.backend = "cpu";
  expectRefused(bytesOf(plan), "a cpu plan holds no generated kernels");
}

TEST(PlanGeneratedKernels, FlippedSectionBytesNeverCrash) {
  const std::string bytes = bytesOf(planWithKernels());
  const std::string section = kernelSectionOf(bytes);
  int refused = 0;
  for (size_t at = 0; at < section.size(); at += at < 160 ? 1 : 61) {
    std::string s = section;
    s[at] ^= 0xA5;
    auto plan = deserializePlan(withKernelSection(bytes, s), "flipped.kiln");
    if (plan.isOk()) continue;  // a flip inside a cubin or a name still parses
    ++refused;
    EXPECT_EQ(plan.status().message().rfind("flipped.kiln: ", 0), 0u) << plan.status().message();
    EXPECT_EQ(plan.status().message().find('\n'), std::string::npos);
  }
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace kiln::test
