#include "input_values.h"

#include <algorithm>
#include <charconv>
#include <vector>

namespace kiln::studio {

bool isValueInput(const ValueInfo& input) {
  if (input.type != DataType::kInt64 && input.type != DataType::kInt32) return false;
  if (!input.hasShape || input.shape.size() > 1) return false;
  int64_t elements = 1;
  for (const DimExpr& d : input.shape) {
    if (!d.isConst()) return false;
    elements *= d.constValue();
  }
  return elements >= 1 && elements <= kMaxValueElements;
}

namespace {

int64_t elementCount(const ValueInfo& input) {
  return input.shape.empty() ? 1 : input.shape[0].constValue();
}

// The integers of `text`, split at commas, spaces and 'x'; false on anything else.
bool parseIntegers(const std::string& text, std::vector<int64_t>* out) {
  size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ',' || text[at] == ' ' || text[at] == 'x') {
      ++at;
      continue;
    }
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + text.size(), value);
    if (error != std::errc()) return false;
    out->push_back(value);
    at = static_cast<size_t>(end - text.data());
  }
  return true;
}

}  // namespace

Result<Tensor> parseInputValue(const ValueInfo& input, const std::string& text) {
  if (!isValueInput(input))
    return invalidArgument("input '" + input.name + "' takes data, not a value");
  std::vector<int64_t> numbers;
  if (!parseIntegers(text, &numbers))
    return invalidArgument("input '" + input.name + "': '" + text + "' is not a list of integers");
  const int64_t wanted = elementCount(input);
  if (static_cast<int64_t>(numbers.size()) != wanted)
    return invalidArgument("input '" + input.name + "' holds " + std::to_string(wanted) +
                           (wanted == 1 ? " integer" : " integers") + ", not " +
                           std::to_string(numbers.size()));
  Shape shape;
  if (!input.shape.empty()) shape.push_back(wanted);
  if (input.type == DataType::kInt64) return Tensor::fromVector(input.type, shape, numbers);
  std::vector<int32_t> narrow;
  for (int64_t n : numbers) {
    if (n < INT32_MIN || n > INT32_MAX)
      return invalidArgument("input '" + input.name + "': " + std::to_string(n) +
                             " does not fit int32");
    narrow.push_back(static_cast<int32_t>(n));
  }
  return Tensor::fromVector(input.type, shape, narrow);
}

std::string inputValueText(const Tensor& value) {
  std::string text;
  for (int64_t i = 0; i < value.numel(); ++i)
    text += (i ? ", " : "") + std::to_string(value.valueAsInt64(i));
  return text;
}

Result<std::shared_ptr<const Network>> withInputValues(
    const std::shared_ptr<const Network>& network, const std::map<std::string, Tensor>& values) {
  if (values.empty() || !network) return network;
  auto copy = std::make_shared<Network>(*network);
  std::vector<ValueInfo>& inputs = copy->graph.inputs;
  for (const auto& [name, value] : values) {
    auto input = std::find_if(inputs.begin(), inputs.end(),
                              [&name](const ValueInfo& i) { return i.name == name; });
    if (input == inputs.end())
      return invalidArgument("'" + name + "' is not an input of the model");
    const int64_t wanted = isValueInput(*input) ? elementCount(*input) : -1;
    if (value.type() != input->type || value.numel() != wanted ||
        value.rank() != static_cast<int>(input->shape.size()))
      return invalidArgument("input '" + name + "': the value does not match its type and shape");
    copy->graph.initializers[name] = value;
    inputs.erase(input);
  }
  return std::shared_ptr<const Network>(std::move(copy));
}

}  // namespace kiln::studio
