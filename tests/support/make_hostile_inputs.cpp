// Writes the hostile inputs of tests/cli/test_hostile_sizes.sh into a folder:
// ONNX models and .npy files from support/hostile_models.h, and, given a plan,
// edited copies of it whose checksums are valid (serializePlan recomputes them).
// Usage: kiln_make_hostile_inputs OUT_DIR [PLAN]
#include <fstream>
#include <iostream>

#include "kiln/plan.h"
#include "support/hostile_models.h"

using namespace kiln;
using namespace kiln::test::hostile;

namespace {

bool write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) std::cerr << "cannot write " << path << "\n";
  return static_cast<bool>(out);
}

bool writeModels(const std::string& dir) {
  const std::pair<const char*, onnx::ModelProto> models[] = {
      {"wrapped_input.onnx", identityModel({3, kWrapsToTwo})},
      {"huge_input.onnx", identityModel({int64_t{1} << 31, int64_t{1} << 31})},
      {"elem_type_9999.onnx", identityModel({2}, 9999)},
      {"elem_type_minus7.onnx", identityModel({2}, -7)},
      {"opset_2e32_17.onnx", opsetModel((int64_t{1} << 32) + 17)},
      {"reshape_wrap.onnx", reshapeFromConstant({3, kWrapsToTwo})},
      {"pad_huge.onnx", padModel({0, 0, int64_t{1} << 30, 0})},
      {"wrapped_weight.onnx", wrappedInitializerModel()},
      {"if_nested_32.onnx", nestedIfModel(32)},
      {"if_nested_70.onnx", nestedIfModel(70)},
      {"output_never_produced.onnx", outputNeverProducedModel()},
      {"split_no_outputs.onnx", splitWithoutOutputsModel()},
      {"empty_input_name.onnx", emptyInputNameModel()},
  };
  bool ok = true;
  for (const auto& [name, model] : models) ok = write(dir + "/" + name, serialized(model)) && ok;
  ok = write(dir + "/wrapped.npy", npyBytes("<f4", {3, kWrapsToTwo}, 8)) && ok;
  // The same lie in a serialized TensorProto (--load-inputs x:wrapped.pb).
  onnx::TensorProto pb = wrappedInitializerModel().graph().initializer(0);
  pb.set_name("x");
  ok = write(dir + "/wrapped.pb", pb.SerializeAsString()) && ok;
  return ok;
}

// Copies of `plan` with one field edited each, as an attacker would.
bool writePlans(const std::string& dir, const Plan& plan) {
  if (plan.profiles.empty() || plan.profiles[0].inputs.empty() || plan.layers.empty()) {
    std::cerr << "the plan needs a profile and a layer\n";
    return false;
  }
  const std::string input = plan.profiles[0].inputs.begin()->first;
  std::vector<std::pair<std::string, Plan>> edits;
  edits.emplace_back("plan_negative_profile_dim.kiln", plan);
  edits.back().second.profiles[0].inputs[input].min[0] = -1;
  edits.emplace_back("plan_wrapped_profile.kiln", plan);
  edits.back().second.profiles[0].inputs[input].max[0] = kWrapsToTwo;
  edits.emplace_back("plan_string_precision.kiln", plan);
  edits.back().second.layers[0].precision = DataType::kString;
  bool ok = true;
  for (const auto& [name, edited] : edits) {
    auto bytes = serializePlan(edited);
    if (!bytes.isOk()) {
      std::cerr << bytes.status().toString() << "\n";
      return false;
    }
    ok = write(dir + "/" + name, bytes.value()) && ok;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: kiln_make_hostile_inputs OUT_DIR [PLAN]\n";
    return 2;
  }
  if (!writeModels(argv[1])) return 1;
  if (argc == 3) {
    auto plan = loadPlanFile(argv[2]);
    if (!plan.isOk()) {
      std::cerr << plan.status().toString() << "\n";
      return 1;
    }
    if (!writePlans(argv[1], plan.value())) return 1;
  }
  return 0;
}
