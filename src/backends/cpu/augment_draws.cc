#include "backends/cpu/augment_draws.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ringtrain::backends::cpu {
namespace {

constexpr uint64_t kDrawGolden = 0x9E3779B97F4A7C15ULL;

}  // namespace

uint64_t DropoutStreamKey(uint64_t seed, int64_t step, int replica, uint64_t layer_hash, uint64_t layer_seed) {
  uint64_t k = SplitMix64Finalize(seed + kDrawGolden);
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(step));
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(static_cast<int64_t>(replica)));
  k = SplitMix64Finalize(k ^ layer_hash);
  return SplitMix64Finalize(k ^ layer_seed);
}

bool DropoutKeep(uint64_t key, uint64_t index, float rate) {
  // Element i is SplitMix64's (i + 1)-th output from state `key`; the top 24 bits give
  // a uniform float in [0, 1) exactly, kept when >= rate (TensorFlow's rule).
  const uint64_t z = SplitMix64Finalize(key + (index + 1) * kDrawGolden);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) >= rate;
}

uint64_t Absorb(uint64_t h, uint64_t v, uint64_t position) {
  return SplitMix64Finalize(h ^ SplitMix64Finalize(v + (position + 1) * 0x9E3779B97F4A7C15ULL));
}

Rng ExampleRng(const StepContext& c, uint64_t layer_key, int64_t example) {
  uint64_t h = Absorb(0, static_cast<uint64_t>(c.step), 0);
  h = Absorb(h, static_cast<uint64_t>(c.replica), 1);
  h = Absorb(h, layer_key, 2);
  h = Absorb(h, static_cast<uint64_t>(example), 3);
  return Rng(c.seed, h);
}

float UniformIn(Rng& rng, double lo, double hi) {
  return static_cast<float>(lo + (hi - lo) * static_cast<double>(rng.Uniform()));
}

int DrawFlips(const StepContext& c, uint64_t key, int64_t example, bool horizontal, bool vertical) {
  Rng rng = ExampleRng(c, key, example);
  int f = 0;
  // Each direction the mode names flips with probability 1/2 (Keras: uniform() <= 0.5).
  if (horizontal && rng.Uniform() < 0.5f) f |= 1;
  if (vertical && rng.Uniform() < 0.5f) f |= 2;
  return f;
}

void DrawCropOffsets(const StepContext& c, uint64_t key, int64_t example, int in_height, int in_width, int height,
                     int width, int* h0, int* w0) {
  Rng rng = ExampleRng(c, key, example);
  // Uniform over the valid offsets, from 53 bits of each draw.
  auto offset = [&rng](int range) {
    const double u = static_cast<double>(rng.Next() >> 11) * (1.0 / 9007199254740992.0);
    return std::min(static_cast<int>(u * range), range - 1);
  };
  *h0 = offset(in_height - height + 1);
  *w0 = offset(in_width - width + 1);
}

void DrawAffineTransform(const StepContext& c, const ops::Op& op, int height, int width, int64_t example, float* t) {
  Rng rng = ExampleRng(c, op.key, example);
  const float h = static_cast<float>(height), w = static_cast<float>(width);
  if (op.kind != ops::OpKind::kRandomRotation) {
    // Keras: translations = [U(width) * W, U(height) * H], drawn height first;
    // matrix [1, 0, -dx, 0, 1, -dy, 0, 0].
    const float dy = UniformIn(rng, op.height_factor_lo, op.height_factor_hi) * h;
    const float dx = UniformIn(rng, op.width_factor_lo, op.width_factor_hi) * w;
    const float m[8] = {1, 0, -dx, 0, 1, -dy, 0, 0};
    std::memcpy(t, m, sizeof(m));
    return;
  }
  // Keras: angle = U(lower * 2pi, upper * 2pi) in float; cos/sin in float.
  constexpr double kTwoPi = 6.283185307179586;
  const float angle = UniformIn(rng, op.angle_factor_lo * kTwoPi, op.angle_factor_hi * kTwoPi);
  const float cs = std::cos(angle), s = std::sin(angle);
  const float x_off = ((w - 1) - (cs * (w - 1) - s * (h - 1))) / 2.0f;
  const float y_off = ((h - 1) - (s * (w - 1) + cs * (h - 1))) / 2.0f;
  const float m[8] = {cs, -s, x_off, s, cs, y_off, 0, 0};
  std::memcpy(t, m, sizeof(m));
}

}  // namespace ringtrain::backends::cpu
