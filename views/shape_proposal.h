// Shapes for a model's dynamic inputs before its first build (issue 26 item 7): what
// the studio's Shapes dialog is pre-filled with, so a dynamic model is never built at
// 1x1 without the user seeing it. No Qt: plain C++ over the network and the files
// beside the model.
//
// Where each input's shape comes from, first match wins:
//   1. the model's ONNX test data: test_data_set_0/input_K.pb beside the model file
//      (the ONNX model zoo's layout), matched by the tensor's name, else by position;
//      files over 16 MiB are not read (this runs when a model opens);
//   2. the symbol's name: batch-like names (batch, N, B, ...) -> 1, sequence-like names
//      (seq, sequence, length, tokens, time, ...) -> 128, height/width-like -> 224;
//   3. the input's layout: a leading symbolic dim is the batch (1); a rank-4 input with
//      1, 3 or 4 channels is an image (224 x 224); an integer rank-2/3 input holds
//      token ids (sequence 128);
//   4. anything else: 1, marked as a guess for the user to check.
// The range: min = opt = max = the proposal, except a batch dim, whose min is 1.
// Value inputs (input_values.h: integer scalars and short vectors, silero's `sr`) get a
// value instead, from the test data when it has one, else none (the user gives it).
#pragma once

#include <string>
#include <vector>

#include "kiln/builder_config.h"
#include "kiln/graph.h"

namespace kiln::studio {

struct ProposedInput {
  std::string name;
  ShapeRange range;
  std::string source;    // "test data (test_data_set_0/input_0.pb)", "batch 1, image 224x224", ...
  bool guessed = false;  // some dim had no rule: 1, to be checked by the user
};

// A value for a value input: "16000" from the test data, or "" when none was found.
struct ProposedValue {
  std::string name;
  std::string text;    // as parseInputValue reads it
  std::string source;  // "test data (test_data_set_0/input_2.pb)", or why there is none
};

struct ShapeProposal {
  OptimizationProfile profile;  // one entry per dynamic input
  std::vector<ProposedInput> inputs;
  std::vector<ProposedValue> values;  // one per value input, in input order
  bool anyGuessed() const;
};

// The proposal for `network`'s inputs with a symbolic dim. `modelPath` (may be empty)
// locates the test data; unreadable test data is skipped, never an error.
ShapeProposal proposeShapes(const Network& network, const std::string& modelPath);

}  // namespace kiln::studio
