#include "plan_mutator.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fnv1a.h"
#include "kiln/plan.h"
#include "onnx_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace kiln::fuzz {
namespace {

constexpr int kSections = 4;  // metadata, model, weights, generated kernels (format 2)
constexpr size_t kAlignment = 64;

uint64_t readU64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + at, sizeof(v));
  return v;
}

void putU32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void putU64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// The four sections of a format-2 plan, or false.
bool splitPlan(const std::string& bytes, std::vector<std::string>* sections) {
  if (bytes.size() < kPlanHeaderBytes || std::memcmp(bytes.data(), kPlanMagic, 8) != 0)
    return false;
  uint32_t headerBytes = 0;
  std::memcpy(&headerBytes, bytes.data() + 12, sizeof(headerBytes));
  if (headerBytes != kPlanHeaderBytes) return false;
  for (int i = 0; i < kSections; ++i) {
    const uint64_t offset = readU64(bytes, 16 + 16 * i), size = readU64(bytes, 24 + 16 * i);
    if (offset > bytes.size() || size > bytes.size() - offset) return false;
    sections->push_back(bytes.substr(offset, size));
  }
  return true;
}

// The file of `sections`, each at an aligned offset, with a matching header and checksum.
std::string layOut(const std::string& original, const std::vector<std::string>& sections) {
  std::string body;
  std::vector<std::pair<uint64_t, uint64_t>> places;
  for (const std::string& s : sections) {
    while ((kPlanHeaderBytes + body.size()) % kAlignment) body.push_back('\0');
    places.emplace_back(kPlanHeaderBytes + body.size(), s.size());
    body += s;
  }
  std::string file = original.substr(0, 16);  // magic, version, header bytes as they were
  for (const auto& [offset, size] : places) {
    putU64(file, offset);
    putU64(file, size);
  }
  putU64(file, fnv1a64(body.data(), body.size()));
  return file + body;
}

// Every value of `doc` (depth first), as JSON pointers.
void collectPointers(const nlohmann::json& doc, const nlohmann::json::json_pointer& at,
                     std::vector<nlohmann::json::json_pointer>* out) {
  out->push_back(at);
  if (doc.is_object()) {
    for (auto it = doc.begin(); it != doc.end(); ++it)
      collectPointers(it.value(), at / it.key(), out);
  } else if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) collectPointers(doc[i], at / i, out);
  }
}

// A string drawn from the document itself (a name, a precision, a type), or a hostile one.
std::string someString(const nlohmann::json& doc, Rng& rng) {
  static const char* kValues[] = {"",     "fp16",     "int8", "float32",          "cuda",
                                  "cpu",  "nan",      "-1",   "../../etc/passwd", "\x1b[31mred",
                                  "Conv", "FusedConv"};
  if (rng() % 4 == 0) return std::string(1 + rng() % 5000, 'A');
  if (rng() % 2 == 0) {
    std::vector<nlohmann::json::json_pointer> all;
    collectPointers(doc, nlohmann::json::json_pointer(), &all);
    for (int tries = 0; tries < 8; ++tries) {
      const nlohmann::json& v = doc.at(all[rng() % all.size()]);
      if (v.is_string()) return v.get<std::string>();
    }
  }
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

nlohmann::json someValue(const nlohmann::json& doc, Rng& rng) {
  switch (rng() % 7) {
    case 0:
      return interestingInt(rng);
    case 1:
      return static_cast<double>(interestingFloat(rng)) * (rng() % 2 ? 1e300 : 1.0);
    case 2:
      return someString(doc, rng);
    case 3:
      return rng() % 2 == 0;
    case 4:
      return nullptr;
    case 5:
      return nlohmann::json::array({interestingInt(rng), interestingInt(rng)});
    default:
      return nlohmann::json::object();
  }
}

// One change to the metadata JSON; false when it does not parse.
bool mutateMetadata(std::string* text, Rng& rng) {
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return false;
  std::vector<nlohmann::json::json_pointer> all;
  collectPointers(doc, nlohmann::json::json_pointer(), &all);
  const nlohmann::json::json_pointer at = all[rng() % all.size()];
  nlohmann::json& v = doc.at(at);
  const unsigned kind = rng() % 4;
  if (v.is_array() && !v.empty() && kind < 2) {
    const size_t i = rng() % v.size();
    if (kind == 0)
      v.erase(i);
    else
      v.push_back(v[i]);  // a duplicated layer, profile or tensor
  } else if (v.is_object() && !v.empty() && kind < 2) {
    auto it = v.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng() % v.size()));
    if (kind == 0)
      v.erase(it);
    else
      it.value() = someValue(doc, rng);
  } else if (v.is_number_integer() || v.is_number_unsigned()) {
    v = rng() % 2 ? nlohmann::json(interestingInt(rng)) : someValue(doc, rng);
  } else if (v.is_string()) {
    v = rng() % 2 ? nlohmann::json(someString(doc, rng)) : someValue(doc, rng);
  } else {
    v = someValue(doc, rng);
  }
  *text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

bool mutateModelSection(std::string* bytes, Rng& rng) {
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) return false;
  bool changed = false;
  for (int i = 1 + static_cast<int>(rng() % 2); i > 0; --i) changed |= mutateOnnxModel(&model, rng);
  return changed && model.SerializeToString(bytes);
}

// libFuzzer's byte mutations of one section, within `room` more bytes.
void mutateBytes(std::string* bytes, size_t room) {
  const size_t size = bytes->size();
  bytes->resize(size + room);
  const size_t n = LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(bytes->data()), size, size + room);
  bytes->resize(n);
}

}  // namespace

size_t mutatePlan(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  Rng rng(seed);
  const std::string original(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sections;
  if (rng() % 8 == 0 || !splitPlan(original, &sections))
    return LLVMFuzzerMutate(data, size, maxSize);
  const unsigned pick = rng() % 10;
  bool changed = false;
  if (pick < 6) {
    changed = mutateMetadata(&sections[0], rng);
  } else if (pick < 8) {
    changed = mutateModelSection(&sections[1], rng);
  } else {
    const size_t which = pick == 8 ? 2 : 3;  // the weights or the generated kernels
    const size_t room = maxSize > size + kSections * kAlignment
                            ? std::min<size_t>(4096, maxSize - size - kSections * kAlignment)
                            : 0;
    mutateBytes(&sections[which], room);
    changed = true;
  }
  if (!changed) return LLVMFuzzerMutate(data, size, maxSize);
  const std::string mutated = layOut(original, sections);
  if (mutated.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, mutated.data(), mutated.size());
  return mutated.size();
}

}  // namespace kiln::fuzz
