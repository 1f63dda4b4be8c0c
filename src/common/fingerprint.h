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

// The same idea for large buffers at memory speed: FNV-1a's step over 64-bit words, in
// four interleaved lanes, continuing from `seed`. Each step is a bijection of the word
// and of the running value, so buffers that differ in a single word always fingerprint
// differently. Not interchangeable with Fingerprint64.
inline uint64_t FingerprintWords(const void* data, size_t bytes, uint64_t seed = 1469598103934665603ULL) {
  constexpr uint64_t kPrime = 1099511628211ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lane[4] = {seed, seed ^ 1, seed ^ 2, seed ^ 3};
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      __builtin_memcpy(&w, p + i + 8 * l, 8);
      lane[l] = (lane[l] ^ w) * kPrime;
    }
  }
  uint64_t h = seed ^ bytes;
  for (uint64_t v : lane) h = (h ^ v) * kPrime;
  for (; i < bytes; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

inline std::string FingerprintHex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ringtrain
