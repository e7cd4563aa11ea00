// Tactic ids as TensorRT shows them; which candidate won a layer.
#include "kiln/build_record.h"

#include <cstdio>

namespace kiln {

uint64_t tacticValueOf(const std::string& tactic) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : tactic) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

bool isWellFormedChoice(const std::string& choice) {
  if (choice.size() > kMaxChoiceBytes) return false;
  for (char c : choice)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

const TacticCandidate* winningCandidate(const LayerRecord& layer) {
  const TacticCandidate* winner = nullptr;
  for (const TacticCandidate& c : layer.candidates) {
    if (c.tactic != layer.tactic || !c.rejected.empty()) continue;
    if (!layer.choice.empty() && c.choice != layer.choice) continue;
    if (!winner || (c.precision == layer.precision && winner->precision != layer.precision))
      winner = &c;
  }
  return winner;
}

std::string tacticValueHex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace kiln
