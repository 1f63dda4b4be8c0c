// backends/cuda/zoom_math.h on the host against the CPU kernel of RandomZoom, bit for bit:
// the GPU's kernel draws each example's transform with zoom::DrawZoom on the host and
// samples with the projective sampler that random_math_test.cc checks against the CPU's;
// here the CPU kernel's output is compared with the CPU sampler run through DrawZoom's
// transforms, for several steps, replicas and arguments.
#include "backends/cuda/zoom_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/image_transform.h"
#include "nn/cpu_run.h"
#include "nn/layers/random_zoom.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

void Check(const json& args, int64_t step, int replica) {
  SCOPED_TRACE(args.dump() + " step " + std::to_string(step) + " replica " + std::to_string(replica));
  const int h = 6, w = 7, c = 2, batch = 3;
  auto made = nn::RandomZoom::Create(args, "zoom", {h, w, c}, "t");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  nn::testing::CpuRun run(**made);
  run.ctx = backends::StepContext{9, step, replica, 4, nullptr};
  const ops::Op& op = run.node().op;
  const size_t size = static_cast<size_t>(h * w * c);
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(batch * size);
  for (float& v : x) v = u(gen);
  const float* y = run.Forward(x.data(), batch, true);
  ASSERT_NE(y, nullptr);
  rm::StepKey s;
  s.seed = run.ctx.seed;
  s.step = run.ctx.step;
  s.replica = run.ctx.replica;
  backends::cpu::ProjectiveSampler sampler;
  sampler.height = h;
  sampler.width = w;
  sampler.channels = c;
  sampler.fill_mode = op.fill_mode;
  sampler.interpolation = op.interpolation;
  const std::vector<float> fill(c, op.fill_value);
  std::vector<float> want(size);
  for (int b = 0; b < batch; ++b) {
    float t[8];
    zoom::DrawZoom(s, op.key, b, h, w, op.height_factor_lo, op.height_factor_hi, op.width_factor_lo,
                   op.width_factor_hi, op.zoom_same_aspect, t);
    sampler.Forward(t, x.data() + b * size, fill.data(), want.data());
    for (size_t i = 0; i < size; ++i) {
      ASSERT_EQ(Bits(y[b * size + i]), Bits(want[i])) << "example " << b << " element " << i;
    }
  }
}

TEST(ZoomMathTest, TransformsAreTheCpus) {
  for (int64_t step : {0, 5}) {
    for (int replica : {0, 1}) {
      Check({{"height_factor", 0.3}}, step, replica);
      Check({{"height_factor", {-0.4, 0.1}}, {"width_factor", 0.6}, {"fill_mode", "constant"}, {"fill_value", 0.5}},
            step, replica);
      Check({{"height_factor", 0.5}, {"interpolation", "nearest"}, {"fill_mode", "wrap"}, {"seed", 2}}, step, replica);
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
