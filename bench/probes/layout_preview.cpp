// kiln_layout_preview: the pass pipeline a CUDA FP16 build runs (channels_last_layout
// included), on an ONNX model at a fixed batch, on a machine without a GPU. Prints the
// reformat layers the layout pass left and the node histogram; with --check also runs the
// rewritten graph and the imported one on the CPU reference (uniform random float inputs)
// and prints the cosine and max abs difference of output 0. A developer's probe (what a
// layout or pass change does to every zoo plan before a device call), not a test.
// Usage: kiln_layout_preview MODEL.onnx [--batch N] [--dim N] [--check] [--show SUBSTRING]
//                            [--disable PASS]... [--count PASS]
//   --batch: every graph input's symbolic dim 0 (default 1); --dim: its other symbolic
//   dims (default 1; a text model's sequence length); --show: print the nodes whose name
//   holds SUBSTRING or whose op type is SUBSTRING, with their inputs, outputs and integer
//   attributes; --disable: run without that pass (a
//   plan's before / after); --count: print how many rewrites that pass made.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/onnx_import.h"
#include "kiln/passes.h"
#include "kiln/reference_backend.h"

using namespace kiln;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: kiln_layout_preview MODEL.onnx [--batch N] [--dim N] [--check] "
                 "[--show SUBSTRING] [--disable PASS]... [--count PASS]\n";
    return 2;
  }
  int64_t batch = 1, dim = 1;
  bool check = false;
  std::string show, counted;
  std::vector<std::string> disabled;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--batch" && i + 1 < argc)
      batch = std::stoll(argv[++i]);
    else if (a == "--dim" && i + 1 < argc)
      dim = std::stoll(argv[++i]);
    else if (a == "--check")
      check = true;
    else if (a == "--show" && i + 1 < argc)
      show = argv[++i];
    else if (a == "--disable" && i + 1 < argc)
      disabled.push_back(argv[++i]);
    else if (a == "--count" && i + 1 < argc)
      counted = argv[++i];
    else {
      std::cerr << "kiln_layout_preview: unknown option " << a << "\n";
      return 2;
    }
  }
  auto imported = importOnnxFile(argv[1]);
  if (!imported.isOk()) {
    std::cerr << "kiln_layout_preview: " << imported.status().toString() << "\n";
    return 1;
  }
  Network original = std::move(imported.value());
  for (ValueInfo& v : original.graph.inputs)
    for (size_t d = 0; d < v.shape.size(); ++d)
      if (!v.shape[d].isConst()) v.shape[d] = DimExpr(d == 0 ? batch : dim);
  Network net = original;
  std::vector<PassApplication> applied;
  Status ran = runPasses(net, 2, disabled, &applied, /*channelsLast=*/true, /*halfPrecision=*/true);
  if (!ran.isOk()) {
    std::cerr << "kiln_layout_preview: " << ran.toString() << "\n";
    return 1;
  }
  std::map<std::string, int> histogram;
  int reformats = 0;
  for (const Node& n : net.graph.nodes) {
    ++histogram[n.opType];
    if (n.name.rfind("Reformat", 0) == 0) {
      ++reformats;
      std::cout << "  " << n.name << "\n";
    }
    if (!show.empty() && (n.name.find(show) != std::string::npos || n.opType == show)) {
      std::cout << n.opType << " " << n.name << " <-";
      for (const std::string& in : n.inputs) std::cout << " " << in;
      std::cout << " ->";
      for (const std::string& out : n.outputs) std::cout << " " << out;
      for (const auto& [key, attribute] : n.attributes) {
        if (attribute.kind == Attribute::Kind::kInt) std::cout << " " << key << "=" << attribute.i;
        if (attribute.kind != Attribute::Kind::kInts) continue;
        std::cout << " " << key << "=[";
        for (size_t k = 0; k < attribute.ints.size(); ++k)
          std::cout << (k ? "," : "") << attribute.ints[k];
        std::cout << "]";
      }
      std::cout << "\n";
    }
  }
  std::cout << "nodes " << net.graph.nodes.size() << " reformats " << reformats << "\n";
  if (!counted.empty())
    std::cout << counted << " applied "
              << std::count_if(applied.begin(), applied.end(),
                               [&](const PassApplication& p) { return p.pass == counted; })
              << "\n";
  for (const auto& [op, count] : histogram) std::cout << op << " " << count << "\n";
  if (!check) return 0;
  std::map<std::string, Tensor> feeds;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (const ValueInfo& v : original.graph.inputs) {
    if (v.type != DataType::kFloat32) {
      std::cerr << "kiln_layout_preview: --check feeds float32 inputs only ('" << v.name
                << "' is not)\n";
      return 1;
    }
    Shape shape;
    for (const DimExpr& d : v.shape) shape.push_back(d.constValue());
    Tensor t(DataType::kFloat32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = uniform(rng);
    feeds[v.name] = t;
  }
  std::vector<NamedTensor> want, got;
  Status a = ReferenceBackend(original).run(feeds, &want);
  Status b = ReferenceBackend(net).run(feeds, &got);
  if (!a.isOk() || !b.isOk() || want.empty() || got.empty()) {
    std::cerr << "kiln_layout_preview: " << (a.isOk() ? b.toString() : a.toString()) << "\n";
    return 1;
  }
  const Tensor& x = want[0].tensor;
  const Tensor& y = got[0].tensor;
  if (x.type() != DataType::kFloat32 || y.type() != DataType::kFloat32 || x.numel() != y.numel()) {
    std::cerr << "kiln_layout_preview: output 0 is not two float32 tensors of one size\n";
    return 1;
  }
  double dot = 0, xx = 0, yy = 0, maxAbs = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double p = x.data<float>()[i], q = y.data<float>()[i];
    dot += p * q;
    xx += p * p;
    yy += q * q;
    maxAbs = std::max(maxAbs, std::fabs(p - q));
  }
  std::cout << "check: cosine " << dot / std::sqrt(xx * yy) << " max abs " << maxAbs << "\n";
  return 0;
}
