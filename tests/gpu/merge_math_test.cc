// backends/cuda/merge_math.h on the host against the CPU backend's merge kernel, bit for
// bit: the CUDA kernels of Subtract, Average, Maximum and Minimum
// (backends/cuda/merge_kernels.cu) are loops over these functions; here the same loops,
// including the Maximum / Minimum chain of launches of eight arrays that continue from the
// running extreme, run on the host for distinct inputs with ties, beside the CPU kernel
// (through nn::testing::CpuRun).
#include "backends/cuda/merge_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/cpu_run.h"
#include "nn/layers/merge_layers.h"

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

// Inputs rounded to quarters in [-2, 2]: many ties between inputs.
std::vector<std::vector<float>> Inputs(int count, size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> u(-8, 8);
  std::vector<std::vector<float>> x(static_cast<size_t>(count), std::vector<float>(n));
  for (auto& v : x) {
    for (float& f : v) f = static_cast<float>(u(gen)) * 0.25f;
  }
  return x;
}

struct MergeRun {
  std::unique_ptr<nn::Layer> layer;
  std::unique_ptr<nn::testing::CpuRun> run;
};

MergeRun Make(const char* cls, int count) {
  const std::vector<nn::Shape> in(static_cast<size_t>(count), nn::Shape{5, 3});
  StatusOr<std::unique_ptr<nn::Layer>> l = InternalError("unknown class");
  const std::string c = cls;
  if (c == "Subtract") l = nn::MergeLayer::CreateSubtract(json::object(), "m", in, "t");
  if (c == "Average") l = nn::MergeLayer::CreateAverage(json::object(), "m", in, "t");
  if (c == "Maximum") l = nn::MergeLayer::CreateMaximum(json::object(), "m", in, "t");
  if (c == "Minimum") l = nn::MergeLayer::CreateMinimum(json::object(), "m", in, "t");
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  MergeRun r;
  if (!l.ok()) return r;
  r.layer = std::move(l).value();
  r.run = std::make_unique<nn::testing::CpuRun>(*r.layer);
  return r;
}

constexpr int kBatch = 3;
constexpr size_t kN = kBatch * 15;

TEST(MergeMathTest, SubtractAndAverageMatchTheCpu) {
  const auto x = Inputs(5, kN, 1);
  const auto dy = Inputs(1, kN, 2)[0];
  {
    MergeRun r = Make("Subtract", 2);
    const float* y = r.run->Forward({x[0].data(), x[1].data()}, kBatch, true);
    std::vector<float> want(kN), dx(kN);
    for (size_t i = 0; i < kN; ++i) want[i] = merge::Subtract(x[0][i], x[1][i]);
    ExpectSameBits(y, want, "Subtract");
    std::vector<const float*> din;
    r.run->Backward(dy.data(), {true, true}, &din);
    for (size_t i = 0; i < kN; ++i) dx[i] = merge::Negate(dy[i]);
    ExpectSameBits(din[0], dy, "Subtract input 0 gradient");
    ExpectSameBits(din[1], dx, "Subtract input 1 gradient");
  }
  for (int count : {2, 3, 5}) {
    MergeRun r = Make("Average", count);
    std::vector<const float*> in;
    for (int k = 0; k < count; ++k) in.push_back(x[k].data());
    const float* y = r.run->Forward(in, kBatch, true);
    // The GPU: Add's left-to-right chain, then DivideByCount.
    std::vector<float> want(kN), dx(kN);
    for (size_t i = 0; i < kN; ++i) {
      float acc = x[0][i];
      for (int k = 1; k < count; ++k) acc = acc + x[k][i];
      want[i] = merge::DivideByCount(acc, count);
      dx[i] = merge::DivideByCount(dy[i], count);
    }
    ExpectSameBits(y, want, "Average of " + std::to_string(count));
    std::vector<const float*> din;
    r.run->Backward(dy.data(), std::vector<bool>(static_cast<size_t>(count), true), &din);
    for (int k = 0; k < count; ++k) ExpectSameBits(din[k], dx, "Average gradient " + std::to_string(k));
  }
}

// The CUDA chain: launches of up to eight arrays, each after the first continuing from
// the running extreme and winner (ExtremeForward in merge_kernels.cu).
void GpuExtreme(const std::vector<std::vector<float>>& x, bool max, std::vector<float>* y, std::vector<int32_t>* win) {
  const int count = static_cast<int>(x.size());
  y->assign(kN, 0.0f);
  win->assign(kN, 0);
  int next = 0;
  while (next < count) {
    const bool continues = next > 0;
    const int first = next;
    std::vector<const float*> a;
    if (continues) a.push_back(y->data());
    while (a.size() < 8 && next < count) a.push_back(x[static_cast<size_t>(next++)].data());
    const int32_t base = continues ? first - 1 : first;
    for (size_t i = 0; i < kN; ++i) {
      float best = a[0][i];
      int32_t at = continues ? (*win)[i] : first;
      for (size_t k = 1; k < a.size(); ++k) merge::ExtremeStep(a[k][i], base + static_cast<int32_t>(k), max, &best, &at);
      (*y)[i] = best;
      (*win)[i] = at;
    }
  }
}

TEST(MergeMathTest, MaximumAndMinimumMatchTheCpuWithTiesAndLongChains) {
  for (const char* cls : {"Maximum", "Minimum"}) {
    for (int count : {2, 3, 8, 9, 17}) {
      SCOPED_TRACE(std::string(cls) + " of " + std::to_string(count));
      const bool max = std::string(cls) == "Maximum";
      const auto x = Inputs(count, kN, 10 + count);
      const auto dy = Inputs(1, kN, 3)[0];
      MergeRun r = Make(cls, count);
      std::vector<const float*> in;
      for (const auto& v : x) in.push_back(v.data());
      const float* y = r.run->Forward(in, kBatch, true);
      std::vector<float> want;
      std::vector<int32_t> win;
      GpuExtreme(x, max, &want, &win);
      ExpectSameBits(y, want, "output");
      std::vector<const float*> din;
      r.run->Backward(dy.data(), std::vector<bool>(static_cast<size_t>(count), true), &din);
      int ties = 0;
      for (size_t i = 0; i < kN; ++i) {
        int holders = 0;
        for (const auto& v : x) holders += v[i] == want[i];
        ties += holders > 1;
      }
      EXPECT_GT(ties, 0) << "the case has no ties to check";
      for (int k = 0; k < count; ++k) {
        std::vector<float> dx(kN);
        for (size_t i = 0; i < kN; ++i) dx[i] = merge::ExtremeGrad(dy[i], win[i], k);
        ExpectSameBits(din[static_cast<size_t>(k)], dx, "input " + std::to_string(k) + " gradient");
      }
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
