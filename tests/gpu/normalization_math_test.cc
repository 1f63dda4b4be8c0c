// backends/cuda/normalization_math.h on the host against the CPU kernel of Normalization,
// bit for bit: the CUDA kernels (backends/cuda/normalization_kernels.cu) are loops over
// these functions; here the same loops run on the host, for the kept-axes layouts (the
// trailing axes, an index table, one scalar), inverted or not, with the values from the
// config and from the weights, a zero variance (the epsilon floor) among them.
#include "backends/cuda/normalization_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/cpu_run.h"
#include "nn/layers/normalization.h"

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

void Check(const json& args, const nn::Shape& in, uint64_t seed) {
  SCOPED_TRACE(args.dump());
  auto made = nn::Normalization::Create(args, "norm", in, "t");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  nn::Layer& layer = **made;
  nn::testing::CpuRun run(layer);
  const ops::Op& op = run.node().op;
  std::vector<float> mean = op.mean_values, variance = op.variance_values;
  if (mean.empty()) {  // the weights: random, one variance 0
    mean = Random(static_cast<size_t>(op.norm_size), seed, -1, 1);
    variance = Random(static_cast<size_t>(op.norm_size), seed + 1, 0, 3);
    variance[0] = 0;
    std::copy(mean.begin(), mean.end(), run.param(0));
    std::copy(variance.begin(), variance.end(), run.param(1));
  }
  const int batch = 3;
  const int64_t size = layer.input_size();
  const size_t n = static_cast<size_t>(batch * size);
  const std::vector<float> x = Random(n, seed + 2, -2, 2), dy = Random(n, seed + 3, -1, 1);
  const float* y = run.Forward(x.data(), batch, true);
  const float* dx = run.Backward(dy.data(), true);
  std::vector<float> scale(static_cast<size_t>(op.norm_size)), want_y(n), want_dx(n);
  for (size_t k = 0; k < scale.size(); ++k) scale[k] = normalization::Scale(variance[k], op.epsilon);
  const int32_t* index = op.norm_index.empty() ? nullptr : op.norm_index.data();
  for (size_t i = 0; i < n; ++i) {
    const int64_t k = normalization::KeptIndex(static_cast<int64_t>(i), size, op.norm_size, index);
    want_y[i] = normalization::Normalize(x[i], mean[k], scale[k], op.invert);
    want_dx[i] = normalization::NormalizeGrad(dy[i], scale[k], op.invert);
  }
  ExpectSameBits(y, want_y, "output");
  ExpectSameBits(dx, want_dx, "input gradient");
}

TEST(NormalizationMathTest, MatchesTheCpuKernel) {
  const nn::Shape img{3, 4, 2};
  Check(json::object(), img, 1);
  Check({{"invert", true}}, img, 2);
  Check({{"axis", 1}}, img, 3);
  Check({{"axis", {1, 3}}, {"invert", true}}, img, 4);
  Check({{"axis", nullptr}}, img, 5);
  Check({{"axis", {-2, -1}}}, img, 6);
  Check({{"mean", {0.5, -1.0}}, {"variance", {2.0, 0.0}}}, img, 7);
  Check({{"axis", 2}, {"mean", {0.5, -1.0, 0.0, 3.0}}, {"variance", {2.0, 0.0, 1.0, 0.01}}, {"invert", true}}, img, 8);
}

}  // namespace
}  // namespace ringtrain::gpu
