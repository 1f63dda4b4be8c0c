#include "nn/initializers/init.h"

#include <cmath>

namespace ringtrain::nn {

Rng::Rng(uint64_t seed, uint64_t stream)
    : state_(SplitMix64Finalize(seed + 0x9E3779B97F4A7C15ULL) ^
             SplitMix64Finalize((stream + 1) * 0xD1B54A32D192ED03ULL)) {}

uint64_t Rng::Next() { return SplitMix64(state_); }

float Rng::Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }

float GlorotLimit(int64_t fan_in, int64_t fan_out) {
  return static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
}

void GlorotUniform(float* out, size_t n, int64_t fan_in, int64_t fan_out, uint64_t seed, uint64_t stream) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  Rng rng(seed, stream);
  // Computed in double and rounded once, so |value| <= float(limit) exactly.
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(limit * (2.0 * rng.Uniform() - 1.0));
}

}  // namespace ringtrain::nn
