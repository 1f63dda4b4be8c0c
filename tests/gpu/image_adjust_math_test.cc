// backends/cuda/image_adjust_math.h on the host against the CPU kernel of RandomBrightness
// and RandomContrast, bit for bit: the per-example factors (rm::ExampleRng / UniformIn),
// the channel means, the clip and the gradients, run as the CUDA kernels
// (backends/cuda/image_adjust_kernels.cu) run them, for several steps and replicas, with
// values that clip.
#include "backends/cuda/image_adjust_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/cpu_run.h"
#include "nn/layers/image_adjust_layers.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

void ExpectSameBits(const float* got, const std::vector<float>& want, const std::string& what) {
  ASSERT_NE(got, nullptr) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(Bits(got[i]), Bits(want[i])) << what << " differs at " << i << ": " << got[i] << " vs " << want[i];
  }
}

std::vector<float> Random(size_t n, uint64_t seed, float lo, float hi) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

void Check(bool contrast, const json& args, int64_t step, int replica) {
  SCOPED_TRACE(args.dump() + " step " + std::to_string(step) + " replica " + std::to_string(replica));
  const int h = 5, w = 3, c = 2, batch = 4;
  auto made = contrast ? nn::ImageAdjust::CreateContrast(args, "adj", {h, w, c}, "t")
                       : nn::ImageAdjust::CreateBrightness(args, "adj", {h, w, c}, "t");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  nn::testing::CpuRun run(**made);
  run.ctx = backends::StepContext{21, step, replica, 4, nullptr};
  const ops::Op& op = run.node().op;
  const int64_t size = h * w * c;
  const size_t n = static_cast<size_t>(batch * size);
  const std::vector<float> x = Random(n, 1, -20, 280), dy = Random(n, 2, -1, 1);
  const float* y = run.Forward(x.data(), batch, true);
  const float* dx = run.Backward(dy.data(), true);
  rm::StepKey s;
  s.seed = run.ctx.seed;
  s.step = run.ctx.step;
  s.replica = run.ctx.replica;
  std::vector<float> factors(batch), means(static_cast<size_t>(batch * c)), t(n), want_y(n), want_dx(n);
  for (int b = 0; b < batch; ++b) factors[b] = adjust::Factor(s, op.key, b, op.adjust_lo, op.adjust_hi);
  for (int k = 0; k < batch * c; ++k) means[k] = adjust::ChannelMean(x.data() + (k / c) * size, h, w, c, k % c);
  int clipped = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t b = static_cast<int64_t>(i) / size;
    t[i] = contrast ? adjust::Contrast(x[i], means[b * c + i % c], factors[b])
                    : adjust::Brighten(x[i], factors[b], op.value_lo, op.value_hi);
    want_y[i] = adjust::Clip(t[i], op.value_lo, op.value_hi);
    want_dx[i] = adjust::ClipGrad(dy[i], t[i], op.value_lo, op.value_hi);
    clipped += want_y[i] != t[i];
  }
  EXPECT_GT(clipped, 0);
  if (contrast) {
    const int64_t pixels = h * w;
    std::vector<float> sums(static_cast<size_t>(batch * c));
    for (int k = 0; k < batch * c; ++k) {
      float acc = 0.0f;
      for (int64_t p = 0; p < pixels; ++p) acc += want_dx[(k / c) * size + p * c + k % c];
      sums[k] = acc;
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = static_cast<int64_t>(i) / size;
      want_dx[i] = adjust::ContrastGrad(want_dx[i], sums[b * c + i % c], factors[b], h, w);
    }
  }
  ExpectSameBits(y, want_y, "output");
  ExpectSameBits(dx, want_dx, "input gradient");
}

TEST(ImageAdjustMathTest, MatchesTheCpuKernel) {
  for (int64_t step : {0, 7}) {
    for (int replica : {0, 2}) {
      Check(false, {{"factor", 0.3}}, step, replica);
      Check(false, {{"factor", {-0.1, 0.4}}, {"value_range", {0, 200}}, {"seed", 3}}, step, replica);
      Check(true, {{"factor", 0.6}}, step, replica);
      Check(true, {{"factor", {0.5, 0.9}}, {"value_range", {0, 150}}}, step, replica);
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
