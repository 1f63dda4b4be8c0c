// GaussianNoise's standard normal draws and SpatialDropout2D's channel mask, for the GPU's
// kernels (backends/cuda/noise_kernels.cu) and, for the draws, the CPU's too
// (backends/cpu/noise_draws.cc calls Log, SinCos2Pi and GaussianDraw: one copy of the
// arithmetic). The mask index repeats backends/cpu/noise_kernels.cc's over augment_draws'
// DropoutKeep (here random_math.h's rm::DropoutKeep); tests/gpu/noise_math_test.cc checks
// the kernels' use of them on the host.
//
// Box-Muller in double from two SplitMix64 draws per pair of elements, with ln, sin and
// cos as polynomials in IEEE double operations rounded one at a time (no libm: the
// device's and the host's differ); the kernels are compiled with --fmad=false and host
// callers must not contract either, so both give the same bits.
//
// Header-only, no CUDA dependency. Pure functions; any thread may call them.
#pragma once

#include <math.h>  // ::sqrt: declared __host__ __device__ by nvcc

#include <cstdint>
#include <cstring>

#include "backends/cuda/random_math.h"

namespace ringtrain::gpu::noise {

// ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)]; ln m = 2 atanh(s),
// s = (m - 1) / (m + 1), |s| < 0.172, the series to s^21 (the next term is below 2^-53).
RT_HD inline double Log(double u) {
  uint64_t bits;
  memcpy(&bits, &u, sizeof(bits));
  int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;
  double m;
  memcpy(&m, &bits, sizeof(m));
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e = e + 1;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double p = 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  return static_cast<double>(e) * 0.6931471805599453 + 2.0 * s * p;
}

// sin and cos of 2 pi t for t in [0, 1): quadrant q of the turn and x = (4t - q) * pi/2 in
// [0, pi/2); Taylor series of sin to x^23 and cos to x^22 (the next terms are below 2^-53).
RT_HD inline void SinCos2Pi(double t, double* s, double* c) {
  const double t4 = t * 4.0;
  const int q = static_cast<int>(t4);
  const double x = (t4 - static_cast<double>(q)) * 1.5707963267948966;
  const double x2 = x * x;
  double sp = -1.0 / 25852016738884976640000.0;
  sp = sp * x2 + 1.0 / 51090942171709440000.0;
  sp = sp * x2 - 1.0 / 121645100408832000.0;
  sp = sp * x2 + 1.0 / 355687428096000.0;
  sp = sp * x2 - 1.0 / 1307674368000.0;
  sp = sp * x2 + 1.0 / 6227020800.0;
  sp = sp * x2 - 1.0 / 39916800.0;
  sp = sp * x2 + 1.0 / 362880.0;
  sp = sp * x2 - 1.0 / 5040.0;
  sp = sp * x2 + 1.0 / 120.0;
  sp = sp * x2 - 1.0 / 6.0;
  sp = sp * x2 + 1.0;
  const double sn = x * sp;
  double cp = 1.0 / 1124000727777607680000.0;
  cp = cp * x2 - 1.0 / 2432902008176640000.0;
  cp = cp * x2 + 1.0 / 6402373705728000.0;
  cp = cp * x2 - 1.0 / 20922789888000.0;
  cp = cp * x2 + 1.0 / 87178291200.0;
  cp = cp * x2 - 1.0 / 479001600.0;
  cp = cp * x2 + 1.0 / 3628800.0;
  cp = cp * x2 - 1.0 / 40320.0;
  cp = cp * x2 + 1.0 / 720.0;
  cp = cp * x2 - 1.0 / 24.0;
  cp = cp * x2 + 1.0 / 2.0;
  const double cs = 1.0 - x2 * cp;
  if (q == 0) {
    *s = sn;
    *c = cs;
  } else if (q == 1) {
    *s = cs;
    *c = -sn;
  } else if (q == 2) {
    *s = -sn;
    *c = -cs;
  } else {
    *s = -cs;
    *c = sn;
  }
}

// The standard normal of element `index` of the stream `key` (backends/cpu/noise_draws.h).
RT_HD inline float GaussianDraw(uint64_t key, uint64_t index) {
  const uint64_t pair = index / 2;
  const uint64_t z1 = rm::SplitMix64Finalize(key + (2 * pair + 1) * rm::kGolden);
  const uint64_t z2 = rm::SplitMix64Finalize(key + (2 * pair + 2) * rm::kGolden);
  const double u1 = static_cast<double>((z1 >> 11) + 1) * (1.0 / 9007199254740992.0);
  const double u2 = static_cast<double>(z2 >> 11) * (1.0 / 9007199254740992.0);
  const double r = sqrt(-2.0 * Log(u1));
  double s, c;
  SinCos2Pi(u2, &s, &c);
  return static_cast<float>(index % 2 == 0 ? r * c : r * s);
}

// GaussianNoise: y = x + draw * stddev (the product rounded first).
RT_HD inline float AddNoise(float x, uint64_t key, uint64_t index, float stddev) {
  return x + GaussianDraw(key, index) * stddev;
}

// SpatialDropout2D: element i of a batch of examples of `size` floats with `channels`
// channels (the last axis) reads mask entry example * channels + channel.
RT_HD inline uint64_t ChannelMaskIndex(int64_t i, int64_t size, int channels) {
  return static_cast<uint64_t>((i / size) * channels + i % channels);
}
// Its factor: scale where the channel is kept, else 0 (rm::DropoutKeep).
RT_HD inline float ChannelMask(uint64_t key, uint64_t mask_index, float rate, float scale) {
  return rm::DropoutKeep(key, mask_index, rate) ? scale : 0.0f;
}

}  // namespace ringtrain::gpu::noise
