// SplitMix64 (Steele, Lea, Flood 2014), the mixer behind every seeded random choice:
// weight initialisation and dropout (nn), augmentation seeds, shuffling and synthetic
// data (data). Spelled out, not taken from <random>, whose distributions are
// implementation-defined: the same seed gives the same bits on every platform.
#pragma once

#include <cstdint>

namespace ringtrain {

// SplitMix64's output function: a bijective 64-bit mixer.
inline uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One step of SplitMix64: advances `state` by the golden-ratio increment and returns the
// mixed value.
inline uint64_t SplitMix64(uint64_t& state) { return SplitMix64Finalize(state += 0x9E3779B97F4A7C15ULL); }

}  // namespace ringtrain
