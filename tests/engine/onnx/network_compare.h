// GoogleTest checks that two Networks (or two runs) are the same, for the exporter's
// round-trip tests: what an export followed by an import must give back.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/graph.h"
#include "kiln/reference_backend.h"

namespace kiln::test {

// Same node list (name, op type, domain, opset, inputs, outputs, attributes with their
// tensors and subgraphs), inputs, outputs, value_info (names, types, symbolic shapes; an
// anonymous "unk__N" dim matches any other anonymous dim) and initializers byte for byte,
// recursively. Node indices are not compared: an export renumbers them in sorted order.
void expectSameGraph(const Graph& actual, const Graph& expected);
// expectSameGraph plus opsets, IR version and producer.
void expectSameNetwork(const Network& actual, const Network& expected);

// Same outputs in the same order: names, types, shapes and bytes (strings by value).
void expectSameOutputs(const std::vector<NamedTensor>& actual,
                       const std::vector<NamedTensor>& expected);
// True when some element of some output is non-zero (or a non-empty string), so that a
// comparison of outputs means something.
bool anyNonZero(const std::vector<NamedTensor>& outputs);

// Random inputs for every graph input, from its declared type and shape: every
// non-constant dim is `dynamicDim`; floats in [-1, 1), integers in [1, 5]; bools are all
// true for an odd seed, all false for an even one (so two seeds take both If branches).
std::map<std::string, Tensor> randomInputs(const Graph& graph, uint32_t seed,
                                           int64_t dynamicDim = 2);
// Random inputs shaped like the reference inputs of a model folder's test_data_set_0
// (input_K.pb): floating-point ones get random values in [-1, 1), the others (sample
// rates, token ids, byte codes) keep the reference values so the model stays valid.
std::map<std::string, Tensor> randomInputsLike(const std::string& modelDir, const Graph& graph,
                                               uint32_t seed);

}  // namespace kiln::test
