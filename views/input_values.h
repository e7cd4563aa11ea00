// Values for a model's value inputs: integer scalars and short integer vectors that a
// model reads as numbers, not as data (silero_vad's sample rate `sr`, a shape tensor).
// Random timing data cannot stand in for them: silero's If takes the branch of its `sr`
// and the 8 kHz branch's LSTM refuses the 16 kHz shapes. The user gives a value, and the
// studio builds the model with that input frozen to it: the input becomes an initializer
// (what onnxsim and polygraphy do to fold an input), so the builder's passes fold what
// hangs on it and the plan no longer takes it. No Qt: plain C++ over the network.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln::studio {

// Inputs with more elements than this are data, not values.
constexpr int64_t kMaxValueElements = 8;

// True for an integer (int32/int64) input of fixed shape with at most
// kMaxValueElements elements: a scalar or a short vector such as a shape.
bool isValueInput(const ValueInfo& input);

// The tensor `text` spells for `input`: integers separated by commas, spaces or 'x'
// ("16000", "1, 3, 224, 224"), exactly as many as the input holds. Errors say why.
Result<Tensor> parseInputValue(const ValueInfo& input, const std::string& text);

// `value`'s elements as parseInputValue reads them ("16000", "1, 3, 224, 224").
std::string inputValueText(const Tensor& value);

// A copy of `network` with each input named in `values` turned into an initializer
// holding its value; `network` itself is untouched. A name that is no input, or a value
// whose type or shape does not match the input's, is an error naming the input.
Result<std::shared_ptr<const Network>> withInputValues(
    const std::shared_ptr<const Network>& network, const std::map<std::string, Tensor>& values);

}  // namespace kiln::studio
