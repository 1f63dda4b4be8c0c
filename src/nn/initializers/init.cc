#include "nn/initializers/init.h"

#include <cmath>

namespace ringtrain::nn {

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
