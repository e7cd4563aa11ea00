// Ed25519 plan signatures (kiln/plan_signature.h): with trusted keys required, a
// signed plan loads, a changed one or one signed by another key is refused, and an
// unsigned plan is refused exactly when it carries generated GPU code.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/builder.h"
#include "kiln/plan.h"
#include "kiln/plan_signature.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {
namespace fs = std::filesystem;

std::shared_ptr<const Network> reluNetwork() {
  auto net = std::make_shared<Network>();
  net->opsets[""] = 17;
  ValueInfo x{"x", DataType::kFloat32, true, {DimExpr(2), DimExpr(4)}};
  net->graph.inputs = {x};
  net->graph.nodes = {makeNode("Relu", {"x"}, {"y"})};
  net->graph.outputs = {{"y", DataType::kUndefined, false, {}}};
  return net;
}

class PlanSignatureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("kiln_sig_" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    ASSERT_TRUE(generateSigningKeyPair(path("a.key"), path("a.pub")).isOk());
    ASSERT_TRUE(generateSigningKeyPair(path("b.key"), path("b.pub")).isOk());
    auto backend = cpuBuildBackend();
    auto built = buildPlan(reluNetwork(), BuilderConfig{}, *backend);
    ASSERT_TRUE(built.isOk()) << built.status().message();
    m_plan = std::move(built.value());
    ASSERT_TRUE(savePlan(m_plan, path("p.kiln")).isOk());
  }
  void TearDown() override {
    EXPECT_TRUE(requirePlanSignatures({}).isOk());  // process-wide: leave it off
    fs::remove_all(m_dir);
  }
  std::string path(const std::string& name) const { return (m_dir / name).string(); }
  static std::string messageOf(const Result<Plan>& r) {
    return r.isOk() ? "loaded" : r.status().message();
  }
  fs::path m_dir;
  Plan m_plan;
};

TEST_F(PlanSignatureTest, KeysArePrivateAndNeverReplaced) {
  struct stat st {};
  ASSERT_EQ(::stat(path("a.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Status again = generateSigningKeyPair(path("a.key"), path("c.pub"));
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.message().find("a.key: cannot create"), std::string::npos);
}

TEST_F(PlanSignatureTest, SignedPlanLoadsUnderTrust) {
  ASSERT_TRUE(signPlanFile(path("p.kiln"), path("a.key")).isOk());
  ASSERT_TRUE(requirePlanSignatures({path("b.pub"), path("a.pub")}).isOk());
  EXPECT_TRUE(planSignaturesRequired());
  EXPECT_EQ(messageOf(loadPlanFile(path("p.kiln"))), "loaded");
}

TEST_F(PlanSignatureTest, LoadReportsTrust) {
  PlanTrust trust{true, true, "poison"};
  ASSERT_TRUE(loadPlanFile(path("p.kiln"), &trust).isOk());
  EXPECT_FALSE(trust.required);  // no keys: nothing checked
  EXPECT_FALSE(trust.isSigned);
  EXPECT_EQ(trust.keyFile, "");

  ASSERT_TRUE(requirePlanSignatures({path("b.pub"), path("a.pub")}).isOk());
  trust = {false, true, "poison"};
  ASSERT_TRUE(loadPlanFile(path("p.kiln"), &trust).isOk());  // unsigned CPU plan
  EXPECT_TRUE(trust.required);
  EXPECT_FALSE(trust.isSigned);
  EXPECT_EQ(trust.keyFile, "");

  ASSERT_TRUE(signPlanFile(path("p.kiln"), path("a.key")).isOk());
  trust = {};
  ASSERT_TRUE(loadPlanFile(path("p.kiln"), &trust).isOk());
  EXPECT_TRUE(trust.required);
  EXPECT_TRUE(trust.isSigned);
  EXPECT_EQ(trust.keyFile, path("a.pub"));  // the key that verified it, not the first
}

TEST_F(PlanSignatureTest, PublicKeyIdMatchesRefusals) {
  Result<std::string> id = publicKeyId(path("b.pub"));
  ASSERT_TRUE(id.isOk()) << id.status().message();
  EXPECT_EQ(id->size(), 16u);
  EXPECT_NE(id.value(), publicKeyId(path("a.pub")).value());
  ASSERT_TRUE(signPlanFile(path("p.kiln"), path("b.key")).isOk());
  ASSERT_TRUE(requirePlanSignatures({path("a.pub")}).isOk());
  EXPECT_EQ(
      messageOf(loadPlanFile(path("p.kiln"))),
      path("p.kiln") + ": signed by key " + id.value() + ", which is not among the trusted keys");
  Result<std::string> bad = publicKeyId(path("a.key"));
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), path("a.key") +
                                        ": not an Ed25519 public key in PEM (make one with "
                                        "`kiln keygen`)");
  EXPECT_TRUE(planSignaturesRequired());  // checking a key file leaves the policy alone
}

TEST_F(PlanSignatureTest, ChangedPlanIsRefused) {
  ASSERT_TRUE(signPlanFile(path("p.kiln"), path("a.key")).isOk());
  {
    std::fstream f(path("p.kiln"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('Z');
  }
  ASSERT_TRUE(requirePlanSignatures({path("a.pub")}).isOk());
  EXPECT_EQ(messageOf(loadPlanFile(path("p.kiln"))),
            path("p.kiln") + ": the signature does not match the plan (changed after signing?)");
}

TEST_F(PlanSignatureTest, OtherSignerIsRefused) {
  ASSERT_TRUE(signPlanFile(path("p.kiln"), path("b.key")).isOk());
  ASSERT_TRUE(requirePlanSignatures({path("a.pub")}).isOk());
  const std::string message = messageOf(loadPlanFile(path("p.kiln")));
  EXPECT_NE(message.find("which is not among the trusted keys"), std::string::npos) << message;
}

TEST_F(PlanSignatureTest, UnsignedPlanWithGeneratedCodeIsRefused) {
  GeneratedKernelBinary cubin;
  cubin.architecture = "sm_90";
  cubin.key = generatedKernelKey("sm_90", "extern \"C\" __global__ void k() {}");
  cubin.layers = {m_plan.network->graph.nodes[0].displayName()};
  cubin.cubin = {'\x7f', 'E', 'L', 'F'};
  m_plan.identity = {"cuda", "NVIDIA H100 80GB HBM3", 9, 0, {{"cudnn", "91400"}}, "0.1.0"};
  m_plan.generatedKernels = {cubin};
  ASSERT_TRUE(savePlan(m_plan, path("code.kiln")).isOk());
  EXPECT_EQ(messageOf(loadPlanFile(path("code.kiln"))), "loaded");  // no trust required
  ASSERT_TRUE(requirePlanSignatures({path("a.pub")}).isOk());
  EXPECT_EQ(messageOf(loadPlanFile(path("code.kiln"))),
            path("code.kiln") +
                ": unsigned plan carries generated GPU code; --trust requires a signature (" +
                path("code.kiln.sig") + ")");
  EXPECT_EQ(messageOf(loadPlanFile(path("p.kiln"))), "loaded");  // CPU plan: data only
  ASSERT_TRUE(signPlanFile(path("code.kiln"), path("a.key")).isOk());
  EXPECT_EQ(messageOf(loadPlanFile(path("code.kiln"))), "loaded");
}

TEST_F(PlanSignatureTest, KeyFilesAreChecked) {
  Status wrongKind = requirePlanSignatures({path("a.key")});
  ASSERT_FALSE(wrongKind.isOk());
  EXPECT_EQ(wrongKind.message(), path("a.key") +
                                     ": not an Ed25519 public key in PEM (make one with "
                                     "`kiln keygen`)");
  EXPECT_FALSE(planSignaturesRequired());
  EXPECT_FALSE(signPlanFile(path("p.kiln"), path("a.pub")).isOk());
  EXPECT_FALSE(requirePlanSignatures({"/dev/zero"}).isOk());
}

}  // namespace
}  // namespace kiln::test
