// FNV-1a, 64 bits: the plan file's checksum and the generated kernels' source keys.
// Not a cryptographic hash: it detects damage, it does not vouch for content.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {

inline uint64_t fnv1a64(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace kiln
