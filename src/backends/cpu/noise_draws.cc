#include "backends/cpu/noise_draws.h"

#include <cmath>
#include <cstring>

#include "common/splitmix.h"

namespace ringtrain::backends::cpu {
namespace {

constexpr uint64_t kNoiseGolden = 0x9E3779B97F4A7C15ULL;
constexpr double kNoiseLn2 = 0.6931471805599453;
constexpr double kNoiseSqrt2 = 1.4142135623730951;
constexpr double kNoiseHalfPi = 1.5707963267948966;

}  // namespace

double NoiseLog(double u) {
  // u = m * 2^e with m in [sqrt(1/2), sqrt(2)]; ln m = 2 atanh(s), s = (m - 1) / (m + 1),
  // |s| < 0.172, the series to s^21 (the next term is below 2^-53 of the sum).
  uint64_t bits;
  std::memcpy(&bits, &u, sizeof(bits));
  int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;  // m in [1, 2); u >= 2^-53 is normal
  double m;
  std::memcpy(&m, &bits, sizeof(m));
  if (m > kNoiseSqrt2) {
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
  return static_cast<double>(e) * kNoiseLn2 + 2.0 * s * p;
}

void NoiseSinCos2Pi(double t, double* s, double* c) {
  // Quadrant q of the turn and x = (4t - q) * pi/2 in [0, pi/2); Taylor series of sin to
  // x^23 and cos to x^22 (the next terms are below 2^-53).
  const double t4 = t * 4.0;  // exact
  const int q = static_cast<int>(t4);
  const double x = (t4 - static_cast<double>(q)) * kNoiseHalfPi;
  const double x2 = x * x;
  double sp = -1.0 / 25852016738884976640000.0;  // -1/23!
  sp = sp * x2 + 1.0 / 51090942171709440000.0;   // 1/21!
  sp = sp * x2 - 1.0 / 121645100408832000.0;     // 1/19!
  sp = sp * x2 + 1.0 / 355687428096000.0;        // 1/17!
  sp = sp * x2 - 1.0 / 1307674368000.0;          // 1/15!
  sp = sp * x2 + 1.0 / 6227020800.0;             // 1/13!
  sp = sp * x2 - 1.0 / 39916800.0;               // 1/11!
  sp = sp * x2 + 1.0 / 362880.0;                 // 1/9!
  sp = sp * x2 - 1.0 / 5040.0;                   // 1/7!
  sp = sp * x2 + 1.0 / 120.0;                    // 1/5!
  sp = sp * x2 - 1.0 / 6.0;                      // 1/3!
  sp = sp * x2 + 1.0;
  const double sn = x * sp;
  double cp = 1.0 / 1124000727777607680000.0;    // 1/22!
  cp = cp * x2 - 1.0 / 2432902008176640000.0;    // 1/20!
  cp = cp * x2 + 1.0 / 6402373705728000.0;       // 1/18!
  cp = cp * x2 - 1.0 / 20922789888000.0;         // 1/16!
  cp = cp * x2 + 1.0 / 87178291200.0;            // 1/14!
  cp = cp * x2 - 1.0 / 479001600.0;              // 1/12!
  cp = cp * x2 + 1.0 / 3628800.0;                // 1/10!
  cp = cp * x2 - 1.0 / 40320.0;                  // 1/8!
  cp = cp * x2 + 1.0 / 720.0;                    // 1/6!
  cp = cp * x2 - 1.0 / 24.0;                     // 1/4!
  cp = cp * x2 + 1.0 / 2.0;                      // 1/2!
  const double cs = 1.0 - x2 * cp;
  switch (q) {
    case 0: *s = sn; *c = cs; break;
    case 1: *s = cs; *c = -sn; break;
    case 2: *s = -sn; *c = -cs; break;
    default: *s = -cs; *c = sn; break;
  }
}

float GaussianDraw(uint64_t key, uint64_t index) {
  const uint64_t pair = index / 2;
  const uint64_t z1 = SplitMix64Finalize(key + (2 * pair + 1) * kNoiseGolden);
  const uint64_t z2 = SplitMix64Finalize(key + (2 * pair + 2) * kNoiseGolden);
  const double u1 = static_cast<double>((z1 >> 11) + 1) * (1.0 / 9007199254740992.0);
  const double u2 = static_cast<double>(z2 >> 11) * (1.0 / 9007199254740992.0);
  const double r = std::sqrt(-2.0 * NoiseLog(u1));
  double s, c;
  NoiseSinCos2Pi(u2, &s, &c);
  return static_cast<float>(index % 2 == 0 ? r * c : r * s);
}

}  // namespace ringtrain::backends::cpu
