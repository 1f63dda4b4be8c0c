// A 64-bit FNV-1a fingerprint of bytes: to compare model weights across workers and
// runs in logs and tests (not a security or integrity checksum).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ringtrain {

inline uint64_t Fingerprint64(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

inline std::string FingerprintHex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ringtrain
