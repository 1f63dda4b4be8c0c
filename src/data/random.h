// The small, portable random number generator behind every random choice in
// src/data (synthetic examples, shuffling). Hand-written on purpose: the standard
// library's distributions are implementation-defined, and ringtrain promises the same
// bits for the same seed on every platform.
#pragma once

#include <cstdint>

#include "common/splitmix.h"

namespace ringtrain::data {

// Derives an independent seed for sub-stream `b` of seed `a` (e.g. pass p of a
// shuffle, example i of a synthetic set). For a fixed `a` the map b -> result is a
// bijection, so distinct sub-streams never share a seed.
inline uint64_t MixSeed(uint64_t a, uint64_t b) {
  uint64_t s = a;
  s = SplitMix64(s) ^ b;
  return SplitMix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return SplitMix64(state_); }
  // Uniform in [0, n) by multiply-shift (Lemire); the bias is below 2^-32 for any
  // n < 2^32, far below anything a training run can notice.
  uint64_t Below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64); }
  // Uniform in [0, 1) with 24 random bits, exactly representable as a float.
  float Unit() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [lo, hi).
  float Range(float lo, float hi) { return lo + (hi - lo) * Unit(); }

 private:
  uint64_t state_;
};

}  // namespace ringtrain::data
