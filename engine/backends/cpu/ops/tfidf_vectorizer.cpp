// TfIdfVectorizer (opset 9): counts the pool's n-grams in each row of X (int32, int64 or
// string; [C] or [B, C]) and writes float32 [B, output_size] (or [output_size]) weighted
// by `mode` (TF: counts, IDF: weight where present, TFIDF: weight * count).
//
// The pool lists n-grams by size: pool[ngram_counts[k] ..] holds the (k+1)-grams. The i-th
// n-gram of the pool goes to column ngram_indexes[i]. An n-gram of size >= 2 may skip up
// to max_skip_count tokens between its items (the same gap throughout); unigrams count
// once. Only sizes in [min_gram_length, max_gram_length] count.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/ops/op_utils.h"
#include "kiln/tensor_size.h"

namespace kiln::cpu {
namespace {

// A trie over token ids; node 0 is the root. column >= 0 marks the end of a pool n-gram.
struct NgramTrie {
  struct Node {
    std::unordered_map<int64_t, int32_t> children;
    int64_t column = -1;
  };
  std::vector<Node> nodes{Node{}};

  // The node reached from `node` by `token`, or -1.
  int32_t child(int32_t node, int64_t token) const {
    const auto& c = nodes[node].children;
    auto it = c.find(token);
    return it == c.end() ? -1 : it->second;
  }
  void insert(const int64_t* tokens, int64_t n, int64_t column) {
    int32_t node = 0;
    for (int64_t i = 0; i < n; ++i) {
      int32_t next = child(node, tokens[i]);
      if (next < 0) {
        next = static_cast<int32_t>(nodes.size());
        nodes[node].children.emplace(tokens[i], next);
        nodes.emplace_back();
      }
      node = next;
    }
    nodes[node].column = column;  // a repeated n-gram keeps its last column
  }
};

struct TfIdfConfig {
  int64_t minGram = 0, maxGram = 0, maxSkip = 0, outputSize = 0;
  std::string mode;
  std::vector<float> weights;
};

// Token ids: pool_int64s are their own ids; strings get the index of their first
// occurrence in pool_strings, and input strings outside the pool get -1.
struct Vocabulary {
  bool strings = false;
  std::unordered_map<std::string, int64_t> ids;
};

Status buildTrie(const KernelContext& ctx, const TfIdfConfig& cfg, NgramTrie* trie,
                 Vocabulary* vocab) {
  const Node& node = ctx.node();
  std::vector<int64_t> pool = node.attrInts("pool_int64s");
  const std::vector<std::string> poolStrings = node.attrStrings("pool_strings");
  if (!poolStrings.empty()) {
    vocab->strings = true;
    pool.clear();
    for (const std::string& s : poolStrings) {
      pool.push_back(vocab->ids.emplace(s, static_cast<int64_t>(vocab->ids.size())).first->second);
    }
  }
  const std::vector<int64_t> counts = node.attrInts("ngram_counts");
  const std::vector<int64_t> indexes = node.attrInts("ngram_indexes");
  const int64_t total = static_cast<int64_t>(pool.size());
  int64_t ngramId = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t size = static_cast<int64_t>(k) + 1;
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : total;
    if (begin < 0 || end > total || begin > end)
      return ctx.error("ngram_counts do not fit the pool");
    const int64_t ngrams = (end - begin) / size;
    for (int64_t g = 0; g < ngrams; ++g, ++ngramId) {
      if (ngramId >= static_cast<int64_t>(indexes.size())) {
        return ctx.error("ngram_indexes has fewer entries than the pool has n-grams");
      }
      if (size >= cfg.minGram && size <= cfg.maxGram) {
        trie->insert(pool.data() + begin + g * size, size, indexes[ngramId]);
      }
    }
  }
  return Status::ok();
}

Status readConfig(const KernelContext& ctx, TfIdfConfig* cfg) {
  const Node& node = ctx.node();
  cfg->minGram = node.attrInt("min_gram_length", 0);
  cfg->maxGram = node.attrInt("max_gram_length", 0);
  cfg->maxSkip = node.attrInt("max_skip_count", 0);
  cfg->mode = node.attrString("mode", "");
  cfg->weights = node.attrFloats("weights");
  if (cfg->minGram < 1 || cfg->maxGram < cfg->minGram || cfg->maxSkip < 0) {
    return ctx.error("need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  }
  if (cfg->mode != "TF" && cfg->mode != "IDF" && cfg->mode != "TFIDF") {
    return ctx.error("attribute 'mode' = '" + cfg->mode + "' is not TF, IDF or TFIDF");
  }
  const std::vector<int64_t> indexes = node.attrInts("ngram_indexes");
  if (indexes.empty()) return ctx.error("attribute 'ngram_indexes' is required");
  for (int64_t i : indexes) {
    // The largest index sets the output width: past the dim limit it is refused here, and
    // i + 1 cannot overflow (INT64_MAX was a fuzz_onnx_import finding).
    if (i < 0 || i >= tensorLimits().maxDim)
      return ctx.error("ngram_indexes entries must lie in [0, " +
                       std::to_string(tensorLimits().maxDim) + "), got " + std::to_string(i));
    cfg->outputSize = std::max(cfg->outputSize, i + 1);
  }
  if (!cfg->weights.empty() && static_cast<int64_t>(cfg->weights.size()) < cfg->outputSize) {
    return ctx.error("weights has fewer entries than the output has columns");
  }
  return Status::ok();
}

// Adds the n-gram counts of one row of tokens to `freq` (outputSize entries).
// Gaps wider than the row fit no n-gram of two or more items, so the skips stop there
// (a max_skip_count of 2^40 once looped for minutes: fuzz_onnx_import), and the span
// test divides instead of multiplying (no overflow for huge gram sizes).
void countRow(const NgramTrie& trie, const TfIdfConfig& cfg, const int64_t* row, int64_t length,
              int64_t* freq) {
  if (length <= 0) return;
  int64_t startSize = cfg.minGram;
  const int64_t lastSkip = std::min(cfg.maxSkip, length) + 1;
  for (int64_t skip = 1; skip <= lastSkip; ++skip) {
    const int64_t span = startSize - 1;     // gaps between the first and last item
    if (span > (length - 1) / skip) break;  // fits nowhere, nor with a wider gap
    const int64_t starts = length - skip * span;
    for (int64_t start = 0; start < starts; ++start) {
      int32_t node = 0;
      for (int64_t size = 1, item = start; size <= cfg.maxGram && item < length;
           ++size, item += skip) {
        node = trie.child(node, row[item]);
        if (node < 0) break;
        const int64_t column = trie.nodes[node].column;
        if (size >= startSize && column >= 0) ++freq[column];
      }
    }
    // Unigrams do not depend on the gap: count them on the first pass only.
    if (startSize == 1 && ++startSize > cfg.maxGram) break;
  }
}

Status tfIdfVectorizerKernel(KernelContext& ctx) {
  KILN_RETURN_IF_ERROR(ctx.requireInputs(1));
  const Tensor& x = ctx.input(0);
  TfIdfConfig cfg;
  KILN_RETURN_IF_ERROR(readConfig(ctx, &cfg));
  NgramTrie trie;
  Vocabulary vocab;
  KILN_RETURN_IF_ERROR(buildTrie(ctx, cfg, &trie, &vocab));
  if (x.rank() > 2)
    return ctx.error("input must be [C] or [B, C], got " + shapeToString(x.shape()));
  if ((x.type() == DataType::kString) != vocab.strings ||
      (x.type() != DataType::kString && x.type() != DataType::kInt32 &&
       x.type() != DataType::kInt64)) {
    return ctx.error(std::string("input of type ") + dataTypeName(x.type()) +
                     " does not match the pool (pool_strings for strings, pool_int64s for ints)");
  }
  std::vector<int64_t> tokens(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (vocab.strings) {
      auto it = vocab.ids.find(x.strings()[i]);
      tokens[i] = it == vocab.ids.end() ? -1 : it->second;
    } else {
      tokens[i] = x.valueAsInt64(i);
    }
  }
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t length = x.rank() == 0 ? 1 : x.dim(-1);
  Shape outShape = x.rank() == 2 ? Shape{rows, cfg.outputSize} : Shape{cfg.outputSize};
  // The width is the model's largest ngram_indexes entry: held to the tensor caps (as
  // int64 counts, the larger of the two buffers) before anything of that size exists.
  KILN_RETURN_IF_ERROR(
      checkTensorSize(DataType::kInt64, outShape, ctx.node().describe() + " output counts"));
  std::vector<int64_t> freq(static_cast<size_t>(rows * cfg.outputSize), 0);
  for (int64_t r = 0; r < rows; ++r) {
    countRow(trie, cfg, tokens.data() + r * length, length, freq.data() + r * cfg.outputSize);
  }
  Tensor& y = ctx.allocateOutput(0, DataType::kFloat32, outShape);
  float* out = y.data<float>();
  for (size_t i = 0; i < freq.size(); ++i) {
    const float w = cfg.weights.empty() ? 1.0f : cfg.weights[i % cfg.outputSize];
    const float f = static_cast<float>(freq[i]);
    if (cfg.mode == "TF")
      out[i] = f;
    else if (cfg.mode == "IDF")
      out[i] = freq[i] > 0 ? w : 0.0f;
    else
      out[i] = w * f;
  }
  return Status::ok();
}

}  // namespace

void registerTfIdfKernels(KernelRegistry& registry) {
  registry.add("TfIdfVectorizer", 9, 1000, &tfIdfVectorizerKernel);
}

}  // namespace kiln::cpu
