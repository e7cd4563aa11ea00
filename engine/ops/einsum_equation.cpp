#include "ops/einsum_equation.h"

#include <algorithm>

namespace kiln::ops {
namespace {

bool isLabel(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Splits a term into letters, noting where "..." stands (-1 when absent).
Status parseTerm(const std::string& term, std::vector<int>* letters, int* ellipsisAt) {
  *ellipsisAt = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0 && *ellipsisAt < 0) {
      *ellipsisAt = static_cast<int>(letters->size());
      i += 2;
    } else if (isLabel(term[i])) {
      letters->push_back(term[i]);
    } else {
      return invalidArgument("equation term '" + term + "' has an invalid character");
    }
  }
  return Status::ok();
}

// Letters with ellipsis ids spliced in where "..." stood (`count` of the `total` ids).
std::vector<int> expandTerm(const std::vector<int>& letters, int ellipsisAt, int count, int total) {
  std::vector<int> labels(letters.begin(), letters.end());
  if (ellipsisAt < 0) return labels;
  std::vector<int> ell;
  for (int j = total - count; j < total; ++j) ell.push_back(kEinsumEllipsisBase + j);
  labels.insert(labels.begin() + ellipsisAt, ell.begin(), ell.end());
  return labels;
}

}  // namespace

Status parseEinsumLabels(std::string eq, const std::vector<int>& ranks, EinsumLabels* out) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    return invalidArgument("equation has " + std::to_string(terms.size()) + " terms for " +
                           std::to_string(ranks.size()) + " inputs");
  }
  std::vector<std::vector<int>> letters(terms.size());
  std::vector<int> ellipsisAt(terms.size()), ellipsisRank(terms.size(), 0);
  int total = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    KILN_RETURN_IF_ERROR(parseTerm(terms[i], &letters[i], &ellipsisAt[i]));
    const int rank = ranks[i], named = static_cast<int>(letters[i].size());
    if (ellipsisAt[i] < 0 ? rank != named : rank < named) {
      return invalidArgument("term '" + terms[i] + "' does not match input rank " +
                             std::to_string(rank));
    }
    ellipsisRank[i] = rank - named;
    total = std::max(total, ellipsisRank[i]);
  }
  out->inputs.clear();
  out->ellipsisDims = total;
  std::vector<int> counts(kEinsumEllipsisBase + total, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    out->inputs.push_back(expandTerm(letters[i], ellipsisAt[i], ellipsisRank[i], total));
    for (int label : out->inputs.back()) ++counts[label];
  }
  out->output.clear();
  if (arrow == std::string::npos) {
    for (int j = 0; j < total; ++j) out->output.push_back(kEinsumEllipsisBase + j);
    for (int c = 0; c < kEinsumEllipsisBase; ++c)
      if (counts[c] == 1) out->output.push_back(c);
    return Status::ok();
  }
  std::vector<int> outLetters;
  int outEllipsis;
  KILN_RETURN_IF_ERROR(parseTerm(eq.substr(arrow + 2), &outLetters, &outEllipsis));
  out->output = expandTerm(outLetters, outEllipsis, total, total);
  for (const int label : out->output) {
    const bool repeated = std::count(out->output.begin(), out->output.end(), label) > 1;
    if ((label < kEinsumEllipsisBase && counts[label] == 0) || repeated) {
      return invalidArgument("output label '" + std::string(1, static_cast<char>(label)) +
                             "' is repeated or missing from the inputs");
    }
  }
  return Status::ok();
}

}  // namespace kiln::ops
