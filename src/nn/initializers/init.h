// Deterministic parameter initialisation. The generator and the int->float
// conversion are spelled out here (not std::uniform_real_distribution, whose
// output is implementation-defined), so a seed gives the same bits on every
// platform and standard library.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/splitmix.h"

namespace ringtrain::nn {

// The seeded generator (common/splitmix.h): stream i is tensor i's.
using ::ringtrain::Rng;

// Keras' GlorotUniform: U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)).
float GlorotLimit(int64_t fan_in, int64_t fan_out);
void GlorotUniform(float* out, size_t n, int64_t fan_in, int64_t fan_out, uint64_t seed, uint64_t stream);

}  // namespace ringtrain::nn
