// Deterministic parameter initialisation. The generator and the int->float
// conversion are spelled out here (not std::uniform_real_distribution, whose
// output is implementation-defined), so a seed gives the same bits on every
// platform and standard library.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/splitmix.h"

namespace ringtrain::nn {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and passes BigCrush; plenty for
// weight initialisation.
class Rng {
 public:
  // Independent streams for the same seed: stream i is tensor i's generator, so
  // one tensor's draws never depend on how many values another tensor took.
  Rng(uint64_t seed, uint64_t stream);
  uint64_t Next();
  // Uniform in [0, 1): the top 24 bits scaled by 2^-24, exact in a float.
  float Uniform();

 private:
  uint64_t state_;
};

// Keras' GlorotUniform: U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)).
float GlorotLimit(int64_t fan_in, int64_t fan_out);
void GlorotUniform(float* out, size_t n, int64_t fan_in, int64_t fan_out, uint64_t seed, uint64_t stream);

}  // namespace ringtrain::nn
