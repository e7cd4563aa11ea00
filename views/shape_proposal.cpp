#include "shape_proposal.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "kiln/data_type.h"
#include "input_values.h"
#include "kiln/onnx_import.h"

namespace kiln::studio {
namespace {

constexpr int64_t kImageSide = 224;
constexpr int64_t kSequence = 128;
constexpr std::uintmax_t kMaxTestInputBytes = 16u << 20;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool containsAny(const std::string& text, std::initializer_list<const char*> words) {
  for (const char* word : words)
    if (text.find(word) != std::string::npos) return true;
  return false;
}

// What a symbol's name says about it: "batch", "sequence", "height"/"width" or "".
std::string meaningOfName(const std::string& symbol) {
  const std::string name = lower(symbol);
  if (name == "n" || name == "b" || name == "bs" || containsAny(name, {"batch"})) return "batch";
  if (name == "t" || name == "s" || name == "l" ||
      containsAny(name, {"seq", "length", "len", "token", "time", "frames", "step"}))
    return "sequence";
  if (name == "h" || name == "w" || containsAny(name, {"height", "width"})) return "spatial";
  return "";
}

// Test data shapes beside the model: input position -> (tensor name, shape).
struct TestInput {
  std::string name;
  Shape shape;
  Tensor value;  // kept only when small enough to be a value input's
};
std::vector<TestInput> readTestInputs(const std::string& modelPath) {
  std::vector<TestInput> out;
  if (modelPath.empty()) return out;
  std::error_code error;
  const std::filesystem::path folder =
      std::filesystem::path(modelPath).parent_path() / "test_data_set_0";
  if (!std::filesystem::is_directory(folder, error)) return out;
  for (int k = 0;; ++k) {
    const std::filesystem::path file = folder / ("input_" + std::to_string(k) + ".pb");
    if (!std::filesystem::is_regular_file(file, error)) break;
    // Read whole to learn a shape, on the GUI thread when a model opens: a large test
    // input is left to the other rules rather than stall the window.
    if (std::filesystem::file_size(file, error) > kMaxTestInputBytes || error) break;
    std::string name;
    auto tensor = readTensorProtoFile(file.string(), &name);
    if (!tensor.isOk()) break;
    const bool small = tensor->numel() <= kMaxValueElements;
    out.push_back({name, tensor->shape(), small ? tensor.value() : Tensor()});
  }
  return out;
}

// The test data's shape for `input` (position `index`), if it fits the declared rank
// and fixed dims.
const TestInput* testInputFor(const std::vector<TestInput>& tests, const ValueInfo& input,
                              size_t index) {
  const TestInput* match = nullptr;
  for (const TestInput& t : tests)
    if (!t.name.empty() && t.name == input.name) match = &t;
  if (!match && index < tests.size()) match = &tests[index];  // by position, as the zoo lays it out
  if (!match || match->shape.size() != input.shape.size()) return nullptr;
  for (size_t d = 0; d < input.shape.size(); ++d)
    if (input.shape[d].isConst() && input.shape[d].constValue() != match->shape[d]) return nullptr;
  return match;
}

bool isImage(const ValueInfo& input) {
  if (input.shape.size() != 4 || !input.shape[1].isConst()) return false;
  const int64_t c = input.shape[1].constValue();
  return c == 1 || c == 3 || c == 4;
}

// One dim of `input` without test data; appends what decided it to `why`.
int64_t proposeDim(const ValueInfo& input, size_t d, std::map<std::string, int>* why, bool* guessed,
                   bool* batch) {
  const DimExpr& dim = input.shape[d];
  if (dim.isConst()) return dim.constValue();
  const std::string meaning = dim.isSymbol() ? meaningOfName(dim.symbolName()) : "";
  if (meaning == "batch" || (meaning.empty() && d == 0 && input.shape.size() > 1)) {
    *batch = true;
    ++(*why)["batch 1"];
    return 1;
  }
  if (meaning == "sequence") {
    ++(*why)["sequence 128"];
    return kSequence;
  }
  if (meaning == "spatial" || (isImage(input) && d >= 2)) {
    ++(*why)["image 224x224"];
    return kImageSide;
  }
  if (isInteger(input.type) && d == 1 && input.shape.size() <= 3) {
    ++(*why)["sequence 128"];
    return kSequence;
  }
  *guessed = true;
  ++(*why)["a guess: 1"];
  return 1;
}

ProposedValue proposeValue(const std::vector<TestInput>& tests, const ValueInfo& input,
                           size_t index) {
  ProposedValue proposed{input.name, "",
                         "no test data: give a value, or leave it empty to "
                         "keep it an input (random while timing)"};
  const TestInput* test = testInputFor(tests, input, index);
  if (test && test->value.defined() && test->value.type() == input.type) {
    proposed.text = inputValueText(test->value);
    proposed.source = "test data (test_data_set_0/input_" + std::to_string(index) + ".pb)";
  }
  return proposed;
}

}  // namespace

bool ShapeProposal::anyGuessed() const {
  return std::any_of(inputs.begin(), inputs.end(),
                     [](const ProposedInput& i) { return i.guessed; });
}

ShapeProposal proposeShapes(const Network& network, const std::string& modelPath) {
  ShapeProposal proposal;
  const std::vector<TestInput> tests = readTestInputs(modelPath);
  for (size_t index = 0; index < network.graph.inputs.size(); ++index) {
    const ValueInfo& input = network.graph.inputs[index];
    if (isValueInput(input)) {
      proposal.values.push_back(proposeValue(tests, input, index));
      continue;
    }
    bool dynamic = false;
    for (const DimExpr& d : input.shape) dynamic = dynamic || !d.isConst();
    if (!input.hasShape || !dynamic) continue;
    ProposedInput proposed;
    proposed.name = input.name;
    if (const TestInput* test = testInputFor(tests, input, index)) {
      proposed.range = {test->shape, test->shape, test->shape};
      proposed.source = "test data (test_data_set_0/input_" + std::to_string(index) + ".pb)";
      if (!input.shape[0].isConst()) proposed.range.min[0] = 1;
    } else {
      std::map<std::string, int> why;
      bool batch = false;
      Shape shape;
      for (size_t d = 0; d < input.shape.size(); ++d)
        shape.push_back(proposeDim(input, d, &why, &proposed.guessed, &batch));
      proposed.range = {shape, shape, shape};
      for (const auto& [reason, count] : why)
        proposed.source += (proposed.source.empty() ? "" : ", ") + reason;
    }
    proposal.profile.inputs[input.name] = proposed.range;
    proposal.inputs.push_back(std::move(proposed));
  }
  return proposal;
}

}  // namespace kiln::studio
