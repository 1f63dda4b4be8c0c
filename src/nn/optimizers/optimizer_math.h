// Scalar helpers shared by the optimizers' per-step computations. Pure functions.
#pragma once

#include <limits>

namespace ringtrain::nn {

// The float nearest to `x`, infinity beyond float's range: what IEEE hardware's
// conversion gives, without relying on a conversion ISO C++ leaves undefined for
// out-of-range values (a learning rate near 3.4e38 with beta_1 near 1 makes Adam's
// alpha so).
inline float ToFloat(double x) {
  if (x > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (x < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

}  // namespace ringtrain::nn
