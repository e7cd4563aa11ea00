// Generated-kernel keys and the plan section that stores the cubins. The section is
// little-endian: u32 entry count, then per entry: u32 length + architecture, u32
// length + key, u32 layer count and per layer u32 length + name, u64 length + cubin.
#include "plan/generated_kernel_section.h"

#include "common/fnv1a.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kiln {

std::string generatedKernelKey(const std::string& architecture, const std::string& source) {
  const uint64_t hash = fnv1a64(source.data(), source.size());
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return architecture + ":" + hex + ":" + std::to_string(source.size());
}

std::string smArchitecture(int computeMajor, int computeMinor) {
  return "sm_" + std::to_string(computeMajor) + std::to_string(computeMinor);
}

namespace plan {
namespace {

// Smallest entry: four lengths and counts, every string and the cubin empty.
constexpr size_t kMinEntryBytes = 4 + 4 + 4 + 8;

void putU32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), 4);
}
void putU64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
void putString(std::string& out, const std::string& s) {
  putU32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads the section front to back; every read checks the bytes that are left.
class SectionReader {
 public:
  explicit SectionReader(const std::string& bytes) : m_bytes(bytes) {}
  size_t left() const { return m_bytes.size() - m_at; }

  Status u32(uint32_t* v, const std::string& what) {
    if (left() < 4) return damaged(what + " is cut off");
    std::memcpy(v, m_bytes.data() + m_at, 4);
    m_at += 4;
    return Status::ok();
  }
  Status u64(uint64_t* v, const std::string& what) {
    if (left() < 8) return damaged(what + " is cut off");
    std::memcpy(v, m_bytes.data() + m_at, 8);
    m_at += 8;
    return Status::ok();
  }
  Status bytes(uint64_t size, const std::string& what, const char** data) {
    if (size > left())
      return damaged(what + " (" + std::to_string(size) + " bytes) runs past the section's end (" +
                     std::to_string(left()) + " bytes left)");
    *data = m_bytes.data() + m_at;
    m_at += size;
    return Status::ok();
  }
  Status string(std::string* s, const std::string& what) {
    uint32_t size = 0;
    KILN_RETURN_IF_ERROR(u32(&size, what + "'s length"));
    const char* data = nullptr;
    KILN_RETURN_IF_ERROR(bytes(size, what, &data));
    s->assign(data, size);
    return Status::ok();
  }
  static Status damaged(const std::string& why) {
    return parseError("generated-kernel section is damaged: " + why);
  }

 private:
  const std::string& m_bytes;
  size_t m_at = 0;
};

Status readEntry(SectionReader& in, const std::string& at, GeneratedKernelBinary* kernel) {
  KILN_RETURN_IF_ERROR(in.string(&kernel->architecture, at + "'s architecture"));
  KILN_RETURN_IF_ERROR(in.string(&kernel->key, at + "'s key"));
  uint32_t layers = 0;
  KILN_RETURN_IF_ERROR(in.u32(&layers, at + "'s layer count"));
  if (layers > in.left() / 4)
    return in.damaged(at + " names " + std::to_string(layers) + " layers, more than the " +
                      std::to_string(in.left()) + " bytes left can hold");
  kernel->layers.resize(layers);
  for (uint32_t i = 0; i < layers; ++i)
    KILN_RETURN_IF_ERROR(in.string(&kernel->layers[i], at + "'s layer name " + std::to_string(i)));
  uint64_t size = 0;
  KILN_RETURN_IF_ERROR(in.u64(&size, at + "'s cubin length"));
  const char* data = nullptr;
  KILN_RETURN_IF_ERROR(in.bytes(size, at + "'s cubin", &data));
  kernel->cubin.assign(data, data + size);
  return Status::ok();
}

// What a well-formed entry must also satisfy: a cubin for the plan's device.
Status checkEntry(const GeneratedKernelBinary& kernel, const std::string& at,
                  const PlanIdentity& identity) {
  if (identity.backend != "cuda")
    return SectionReader::damaged(at + ": a " + identity.backend +
                                  " plan holds no generated kernels");
  const std::string expected = smArchitecture(identity.computeMajor, identity.computeMinor);
  if (kernel.architecture != expected)
    return SectionReader::damaged(at + " is compiled for '" + kernel.architecture +
                                  "', the plan's device is " + expected);
  if (kernel.key.rfind(expected + ":", 0) != 0)
    return SectionReader::damaged(at + "'s key '" + kernel.key + "' is not for " + expected);
  if (kernel.cubin.empty()) return SectionReader::damaged(at + "'s cubin is empty");
  return Status::ok();
}

}  // namespace

std::string encodeGeneratedKernels(const std::vector<GeneratedKernelBinary>& kernels) {
  if (kernels.empty()) return "";  // an empty section: no generated kernels
  std::string out;
  putU32(out, static_cast<uint32_t>(kernels.size()));
  for (const GeneratedKernelBinary& k : kernels) {
    putString(out, k.architecture);
    putString(out, k.key);
    putU32(out, static_cast<uint32_t>(k.layers.size()));
    for (const std::string& layer : k.layers) putString(out, layer);
    putU64(out, k.cubin.size());
    out.append(k.cubin.data(), k.cubin.size());
  }
  return out;
}

Result<std::vector<GeneratedKernelBinary>> decodeGeneratedKernels(const std::string& bytes,
                                                                  const PlanIdentity& identity) {
  std::vector<GeneratedKernelBinary> kernels;
  if (bytes.empty()) return kernels;
  SectionReader in(bytes);
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(in.u32(&count, "the entry count"));
  if (count > in.left() / kMinEntryBytes)
    return in.damaged(std::to_string(count) + " entries cannot fit in " +
                      std::to_string(in.left()) + " bytes");
  kernels.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const std::string at = "entry " + std::to_string(i);
    KILN_RETURN_IF_ERROR(readEntry(in, at, &kernels[i]));
    KILN_RETURN_IF_ERROR(checkEntry(kernels[i], at, identity));
  }
  if (in.left() != 0) return in.damaged(std::to_string(in.left()) + " bytes follow the last entry");
  return kernels;
}

}  // namespace plan
}  // namespace kiln
