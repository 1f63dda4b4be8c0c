// The per-channel normalization kernels: AVX-512 (where the CPU has it) gives exactly
// the portable loops' bits, for channel counts that are and are not multiples of 16,
// with and without the fused relu's mask; and the portable loops compute what they say.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/impl.h"
#include "kernel_test_util.h"
#include "kernels/elementwise.h"
#include "kernels/norm.h"

namespace ringtrain::kernels {
namespace {

template <typename T>
void ExpectSameBits(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(T))) << what;
}

TEST(NormKernels, Avx512GivesThePortableBits) {
  if (!UseAvx512()) GTEST_SKIP() << "this CPU has no AVX-512: only the portable loops run here";
  for (int c : {1, 5, 16, 21, 40, 64, 130}) {  // 130: two groups of 64 channels and a tail
    const size_t rows = 37;
    const size_t n = rows * static_cast<size_t>(c);
    const std::vector<float> x = Random(n, 1 + c), dy = Random(n, 2 + c), a = Random(c, 3), b = Random(c, 4);
    std::vector<float> y = Random(n, 5 + c);
    y[0] = std::nanf("");  // a NaN output masks like any value not > 0
    const std::vector<float> mg = Random(c, 6), mean = Random(c, 7);
    for (const float* mask : {static_cast<const float*>(nullptr), static_cast<const float*>(y.data())}) {
      const std::string what = "c=" + std::to_string(c) + (mask != nullptr ? " masked" : "");
      std::vector<double> s1(c), q1(c), s2(c), q2(c);
      if (mask == nullptr) {
        portable::ChannelSums(x.data(), rows, c, s1.data(), q1.data());
        avx512::ChannelSums(x.data(), rows, c, s2.data(), q2.data());
        ExpectSameBits(s1, s2, "sums " + what);
        ExpectSameBits(q1, q2, "squares " + what);
      }
      portable::ChannelGradSums(dy.data(), {mask}, x.data(), rows, c, s1.data(), q1.data());
      avx512::ChannelGradSums(dy.data(), {mask}, x.data(), rows, c, s2.data(), q2.data());
      ExpectSameBits(s1, s2, "grad sums " + what);
      ExpectSameBits(q1, q2, "grad x sums " + what);
      std::vector<float> o1(n), o2(n);
      portable::ChannelAffine(x.data(), rows, c, a.data(), b.data(), nullptr, mask != nullptr, o1.data());
      avx512::ChannelAffine(x.data(), rows, c, a.data(), b.data(), nullptr, mask != nullptr, o2.data());
      ExpectSameBits(o1, o2, "affine " + what);
      // With a fused Add: the bits of the affine, then AddArrays.
      std::vector<float> o3(n);
      portable::ChannelAffine(x.data(), rows, c, a.data(), b.data(), nullptr, false, o3.data());
      portable::AddArrays(o3.data(), dy.data(), n, mask != nullptr, o3.data());
      portable::ChannelAffine(x.data(), rows, c, a.data(), b.data(), dy.data(), mask != nullptr, o1.data());
      avx512::ChannelAffine(x.data(), rows, c, a.data(), b.data(), dy.data(), mask != nullptr, o2.data());
      ExpectSameBits(o1, o3, "affine + add (portable) " + what);
      ExpectSameBits(o2, o3, "affine + add (avx512) " + what);
      portable::ChannelInputGrad(dy.data(), {mask}, x.data(), rows, c, a.data(), mg.data(), b.data(), mean.data(),
                                 o1.data());
      avx512::ChannelInputGrad(dy.data(), {mask}, x.data(), rows, c, a.data(), mg.data(), b.data(), mean.data(),
                               o2.data());
      ExpectSameBits(o1, o2, "input grad " + what);
      portable::ChannelScaleGrad(dy.data(), mask, rows, c, a.data(), o1.data());
      avx512::ChannelScaleGrad(dy.data(), mask, rows, c, a.data(), o2.data());
      ExpectSameBits(o1, o2, "scale grad " + what);
    }
  }
}

// A relu's mask recomputed from x and the affine that made the output gives the bits of
// the mask read from the output, in both implementations.
TEST(NormKernels, MaskFromTheAffineIsTheMaskFromTheOutput) {
  for (int c : {3, 16, 21, 64, 70, 130}) {
    const size_t rows = 37, n = rows * static_cast<size_t>(c);
    std::vector<float> x = Random(n, 11), dy = Random(n, 12);
    const std::vector<float> a = Random(c, 13), b = Random(c, 14), mg = Random(c, 15), mean = Random(c, 16);
    x[1] = std::nanf("");
    x[2] = 0.0f;  // with b = 0 below: an output of exactly 0, masked
    std::vector<float> bz = b;
    if (c > 2) bz[2] = 0.0f;
    std::vector<float> y(n);
    ChannelAffine(x.data(), rows, c, a.data(), bz.data(), nullptr, true, y.data());
    const ReluOutput from_y{y.data()}, from_affine{nullptr, a.data(), bz.data()};
    for (bool avx : {false, true}) {
      if (avx && !UseAvx512()) continue;
      auto sums = avx ? avx512::ChannelGradSums : portable::ChannelGradSums;
      auto input_grad = avx ? avx512::ChannelInputGrad : portable::ChannelInputGrad;
      std::vector<double> s1(c), q1(c), s2(c), q2(c);
      sums(dy.data(), from_y, x.data(), rows, c, s1.data(), q1.data());
      sums(dy.data(), from_affine, x.data(), rows, c, s2.data(), q2.data());
      ExpectSameBits(s1, s2, "grad sums c=" + std::to_string(c));
      ExpectSameBits(q1, q2, "grad x sums c=" + std::to_string(c));
      std::vector<float> o1(n), o2(n);
      input_grad(dy.data(), from_y, x.data(), rows, c, a.data(), mg.data(), b.data(), mean.data(), o1.data());
      input_grad(dy.data(), from_affine, x.data(), rows, c, a.data(), mg.data(), b.data(), mean.data(), o2.data());
      ExpectSameBits(o1, o2, "input grad c=" + std::to_string(c));
    }
  }
}

TEST(NormKernels, ComputeWhatTheySay) {
  const int c = 3;
  const size_t rows = 2;
  const std::vector<float> x = {1, -2, 3, 4, 5, -6};
  const std::vector<float> dy = {0.5f, 1, -1, 2, -0.25f, 4};
  const std::vector<float> y = {1, 0, 2, -1, 3, 0};  // mask: rows' channels where y > 0
  std::vector<double> s(c), q(c);
  ChannelSums(x.data(), rows, c, s.data(), q.data());
  EXPECT_EQ(s, (std::vector<double>{5, 3, -3}));
  EXPECT_EQ(q, (std::vector<double>{17, 29, 45}));
  ChannelGradSums(dy.data(), {y.data()}, x.data(), rows, c, s.data(), q.data());
  EXPECT_EQ(s, (std::vector<double>{0.5, -0.25, -1}));
  EXPECT_EQ(q, (std::vector<double>{0.5, -1.25, -3}));
  const std::vector<float> a = {2, 1, -1}, b = {0, -10, 1};
  std::vector<float> out(rows * c);
  ChannelAffine(x.data(), rows, c, a.data(), b.data(), nullptr, true, out.data());
  EXPECT_EQ(out, (std::vector<float>{2, 0, 0, 8, 0, 7}));
  ChannelAffine(x.data(), rows, c, a.data(), b.data(), dy.data(), false, out.data());
  EXPECT_EQ(out, (std::vector<float>{2.5f, -11, -3, 10, -5.25f, 11}));
  ChannelScaleGrad(dy.data(), y.data(), rows, c, a.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 0, 1, 0, -0.25f, 0}));
  const std::vector<float> mg = {1, 0, 0}, mean = {0, 1, 0};
  ChannelInputGrad(dy.data(), {}, x.data(), rows, c, a.data(), mg.data(), b.data(), mean.data(), out.data());
  // a * (dy - mg) + b * (x - mean)
  EXPECT_EQ(out, (std::vector<float>{-1, 31, 4, 2, -40.25f, -10}));
}

}  // namespace
}  // namespace ringtrain::kernels
