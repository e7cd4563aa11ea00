#include "ir/conv_max_pool.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace kiln {
namespace {

bool isPoolAttribute(const std::string& key) {
  return key.rfind(kPoolAttributePrefix, 0) == 0;
}

}  // namespace

Node convPartOf(const Node& node) {
  Node conv = node;
  for (auto it = conv.attributes.begin(); it != conv.attributes.end();)
    it = isPoolAttribute(it->first) ? conv.attributes.erase(it) : std::next(it);
  conv.inputs.resize(std::min<size_t>(conv.inputs.size(), kConvPoolYScale));
  return conv;
}

Node poolPartOf(const Node& node) {
  Node pool = node;
  pool.inputs.clear();
  pool.attributes.clear();
  const size_t prefix = std::string(kPoolAttributePrefix).size();
  for (const auto& [key, value] : node.attributes)
    if (isPoolAttribute(key)) pool.attributes[key.substr(prefix)] = value;
  return pool;
}

}  // namespace kiln
