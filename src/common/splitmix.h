// SplitMix64 (Steele, Lea, Flood 2014), the mixer behind every seeded random choice:
// weight initialisation (nn), Dropout's masks and the augmentation ops' draws
// (backends/cpu/augment_draws.h), shuffling and synthetic data (data). Spelled out, not
// taken from <random>, whose distributions are implementation-defined: the same seed
// gives the same bits on every platform.
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

// SplitMix64 as a generator: tiny, fast, and passes BigCrush; plenty for weight
// initialisation and augmentation. Independent streams for the same seed: stream i is
// tensor i's generator (or one example's), so one stream's draws never depend on how
// many values another took.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream)
      : state_(SplitMix64Finalize(seed + 0x9E3779B97F4A7C15ULL) ^
               SplitMix64Finalize((stream + 1) * 0xD1B54A32D192ED03ULL)) {}
  uint64_t Next() { return SplitMix64(state_); }
  // Uniform in [0, 1): the top 24 bits scaled by 2^-24, exact in a float.
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

}  // namespace ringtrain
