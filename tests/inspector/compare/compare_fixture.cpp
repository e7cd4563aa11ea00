#include "inspector/compare/compare_fixture.h"

#include <random>

#include "kiln/onnx_import.h"
#include "support/op_test.h"
#include "support/test_graph.h"

namespace kiln::test {
namespace {

Tensor wideWeights() {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> magnitude(1.2e5f, 2.5e5f);
  std::vector<float> values(16 * 16);
  for (float& v : values) v = (rng() & 1 ? 1.f : -1.f) * magnitude(rng);
  return floatTensor({16, 16}, values);
}

class ShiftedRunner : public compare::ModelRunner {
 public:
  ShiftedRunner(std::unique_ptr<compare::ModelRunner> inner, bool faulty)
      : m_inner(std::move(inner)), m_faulty(faulty) {}
  std::string description() const override { return m_inner->description(); }
  const Network& network() const override { return m_inner->network(); }
  std::vector<compare::ExposedTensor> intermediates() const override {
    return m_inner->intermediates();
  }
  std::map<std::string, std::string> layerOfNode() const override { return m_inner->layerOfNode(); }
  Status run(const std::map<std::string, Tensor>& inputs, const std::vector<std::string>& extra,
             std::vector<NamedTensor>* outputs) override {
    KILN_RETURN_IF_ERROR(m_inner->run(inputs, extra, outputs));
    if (!m_faulty) return Status::ok();
    for (NamedTensor& out : *outputs) {
      Tensor changed = out.tensor.clone();
      for (int64_t i = 0; i < changed.numel(); ++i) changed.data<float>()[i] += 1.f;
      out.tensor = changed;
    }
    return Status::ok();
  }

 private:
  std::unique_ptr<compare::ModelRunner> m_inner;
  bool m_faulty;
};

}  // namespace

compare::PlanRunnerFactory shiftedOutputsWhen(std::function<bool(const Plan&)> faulty) {
  return
      [faulty](std::shared_ptr<const Plan> plan) -> Result<std::unique_ptr<compare::ModelRunner>> {
        const bool shift = faulty(*plan);
        KILN_ASSIGN_OR_RETURN(auto inner, compare::cpuPlanRunner(plan, "plan"));
        return std::unique_ptr<compare::ModelRunner>(
            std::make_unique<ShiftedRunner>(std::move(inner), shift));
      };
}

std::shared_ptr<const Network> smallCnn() {
  static std::shared_ptr<const Network> network = [] {
    auto imported = importOnnxFile(std::string(KILN_TEST_DATA_DIR) + "/compare/small_cnn.onnx");
    EXPECT_TRUE(imported.isOk()) << imported.status().toString();
    return std::make_shared<const Network>(std::move(imported.value()));
  }();
  return network;
}

std::shared_ptr<const Network> perturbedSmallCnn(float delta) {
  auto copy = std::make_shared<Network>(*smallCnn());
  Tensor weight = copy->graph.initializers.at("conv2.w").clone();
  weight.data<float>()[0 * 72 + 0 * 9 + 1 * 3 + 1] += delta;
  copy->graph.initializers["conv2.w"] = weight;
  return copy;
}

std::shared_ptr<const Network> fp16OverflowNetwork() {
  auto net = std::make_shared<Network>();
  net->opsets[""] = 17;
  Graph& g = net->graph;
  g.inputs = {{"x", DataType::kFloat32, true, {DimExpr(4), DimExpr(16)}}};
  g.initializers["fc1.w"] = randomTensor(DataType::kFloat32, {16, 16}, 1, -0.5, 0.5);
  g.initializers["fc2.w"] = randomTensor(DataType::kFloat32, {16, 16}, 2, -0.5, 0.5);
  g.initializers["fc4.w"] = randomTensor(DataType::kFloat32, {16, 16}, 4, -0.5, 0.5);
  g.initializers["fc5.w"] = randomTensor(DataType::kFloat32, {16, 8}, 5, -0.5, 0.5);
  g.initializers["wide_proj.w"] = wideWeights();
  g.initializers["milli"] = floatTensor({}, {1e-3f});
  // Per row, not a scalar or one factor per column: fold_scale_into_matmul would fold
  // those into wide_proj's weights and so remove the overflow this network is for.
  g.initializers["milli16"] = floatTensor({4, 1}, std::vector<float>(4, 1e-3f));
  g.nodes = {makeNode("MatMul", {"x", "fc1.w"}, {"fc1"}),
             makeNode("Relu", {"fc1"}, {"relu1"}),
             makeNode("MatMul", {"relu1", "fc2.w"}, {"fc2"}),
             makeNode("Tanh", {"fc2"}, {"tanh2"}),
             makeNode("Mul", {"tanh2", "milli"}, {"shrink"}),
             makeNode("MatMul", {"shrink", "wide_proj.w"}, {"wide_proj"}),
             makeNode("Mul", {"wide_proj", "milli16"}, {"rescale"}),
             makeNode("Tanh", {"rescale"}, {"tanh3"}),
             makeNode("MatMul", {"tanh3", "fc4.w"}, {"fc4"}),
             makeNode("Sigmoid", {"fc4"}, {"sigmoid4"}),
             makeNode("MatMul", {"sigmoid4", "fc5.w"}, {"fc5"}),
             withInt(makeNode("Softmax", {"fc5"}, {"probs"}), "axis", -1)};
  for (size_t i = 0; i < g.nodes.size(); ++i) g.nodes[i].index = static_cast<int>(i);
  g.outputs = {{"probs", DataType::kFloat32, true, {DimExpr(4), DimExpr(8)}}};
  return net;
}

std::map<std::string, Tensor> randomInputs(const Network& network, uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const ValueInfo& in : network.graph.inputs) {
    Shape shape;
    for (const DimExpr& d : in.shape) shape.push_back(d.constValue());
    inputs[in.name] = randomInputTensor(DataType::kFloat32, shape, seed);
  }
  return inputs;
}

std::shared_ptr<const Plan> buildCpu(std::shared_ptr<const Network> network,
                                     const BuilderConfig& config) {
  auto backend = cpuBuildBackend();
  auto plan = buildPlan(std::move(network), config, *backend);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? std::make_shared<const Plan>(std::move(plan.value())) : nullptr;
}

}  // namespace kiln::test
