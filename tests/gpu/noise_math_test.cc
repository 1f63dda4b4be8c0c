// backends/cuda/noise_math.h on the host against the CPU, bit for bit: GaussianNoise's
// Box-Muller draws (backends/cpu/noise_draws.h) over many keys and indices, and the
// SpatialDropout2D and GaussianNoise CPU kernels' outputs and gradients against the loops
// the CUDA kernels run (backends/cuda/noise_kernels.cu), for several steps and replicas.
#include "backends/cuda/noise_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/noise_draws.h"
#include "nn/cpu_run.h"
#include "nn/layers/noise_layers.h"

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

std::vector<float> Random(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

TEST(NoiseMathTest, GaussianDrawsAreTheCpus) {
  for (uint64_t key : {uint64_t{0}, uint64_t{1}, uint64_t{0x9E3779B97F4A7C15ULL}, ~uint64_t{0}, uint64_t{123456789}}) {
    for (uint64_t i = 0; i < 20000; ++i) {
      ASSERT_EQ(Bits(noise::GaussianDraw(key, i)), Bits(backends::cpu::GaussianDraw(key, i))) << key << " " << i;
    }
  }
  for (double u : {1.0, 0.5, 1e-300, 1.1102230246251565e-16, 0.7071067811865476, 1.4142135623730951 / 2}) {
    const double a = noise::Log(u), b = backends::cpu::NoiseLog(u);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof(a)), 0) << u;
  }
}

TEST(NoiseMathTest, KernelsMatchTheCpu) {
  for (int64_t step : {0, 1, 17}) {
    for (int replica : {0, 3}) {
      SCOPED_TRACE("step " + std::to_string(step) + " replica " + std::to_string(replica));
      backends::StepContext ctx{11, step, replica, 4, nullptr};
      const int batch = 3;
      {
        auto made = nn::SpatialDropout2D::Create({{"rate", 0.35}, {"seed", 8}}, "sd", {4, 5, 6}, "t");
        ASSERT_TRUE(made.ok());
        nn::testing::CpuRun run(**made);
        run.ctx = ctx;
        const ops::Op& op = run.node().op;
        const int64_t size = 120;
        const size_t n = static_cast<size_t>(batch * size);
        const std::vector<float> x = Random(n, 1), dy = Random(n, 2);
        const float* y = run.Forward(x.data(), batch, true);
        const float* dx = run.Backward(dy.data(), true);
        const uint64_t key = rm::DropoutStreamKey(ctx.seed, ctx.step, ctx.replica, op.name_hash, op.layer_seed);
        std::vector<float> want_y(n), want_dx(n);
        int zeros = 0;
        for (size_t i = 0; i < n; ++i) {
          const float m =
              noise::ChannelMask(key, noise::ChannelMaskIndex(static_cast<int64_t>(i), size, 6), op.rate, op.dropout_scale);
          want_y[i] = x[i] * m;
          want_dx[i] = dy[i] * m;
          zeros += m == 0.0f;
        }
        EXPECT_GT(zeros, 0);
        ExpectSameBits(y, want_y, "SpatialDropout2D output");
        ExpectSameBits(dx, want_dx, "SpatialDropout2D gradient");
      }
      {
        auto made = nn::GaussianNoise::Create({{"stddev", 0.3}}, "gn", {7, 3}, "t");
        ASSERT_TRUE(made.ok());
        nn::testing::CpuRun run(**made);
        run.ctx = ctx;
        const ops::Op& op = run.node().op;
        const size_t n = static_cast<size_t>(batch * 21);
        const std::vector<float> x = Random(n, 3);
        const float* y = run.Forward(x.data(), batch, true);
        const uint64_t key = rm::DropoutStreamKey(ctx.seed, ctx.step, ctx.replica, op.name_hash, op.layer_seed);
        std::vector<float> want(n);
        for (size_t i = 0; i < n; ++i) want[i] = noise::AddNoise(x[i], key, i, op.stddev);
        ExpectSameBits(y, want, "GaussianNoise output");
      }
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
