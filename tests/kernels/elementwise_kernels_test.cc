// The elementwise kernels: AVX-512 (where the CPU has it) gives the plain loops' bits
// on lengths around the vector width, NaN and signed zeros included; the loops compute
// what they say.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "kernels/elementwise.h"
#include "kernels/impl.h"

namespace ringtrain::kernels {
namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ElementwiseKernels, Avx512GivesThePortableBits) {
  if (!UseAvx512()) GTEST_SKIP() << "this CPU has no AVX-512: only the portable loops run here";
  for (size_t n : {1u, 15u, 16u, 17u, 100u}) {
    std::vector<float> a = Random(n, 1), b = Random(n, 2), y = Random(n, 3);
    a[0] = std::nanf("");
    if (n > 2) {
      a[1] = -0.0f;
      b[1] = 0.0f;
      y[2] = -0.0f;
    }
    for (bool relu : {false, true}) {
      std::vector<float> p(n), q(n);
      portable::AddArrays(a.data(), b.data(), n, relu, p.data());
      avx512::AddArrays(a.data(), b.data(), n, relu, q.data());
      EXPECT_TRUE(SameBits(p, q)) << "AddArrays n=" << n << " relu=" << relu;
    }
    std::vector<float> p = b, q = b;
    portable::AccumulateArray(p.data(), a.data(), n);
    avx512::AccumulateArray(q.data(), a.data(), n);
    EXPECT_TRUE(SameBits(p, q)) << "AccumulateArray n=" << n;
    portable::ReluMask(a.data(), y.data(), n, p.data());
    avx512::ReluMask(a.data(), y.data(), n, q.data());
    EXPECT_TRUE(SameBits(p, q)) << "ReluMask n=" << n;
    portable::AddArraysMasked(a.data(), b.data(), y.data(), n, p.data());
    avx512::AddArraysMasked(a.data(), b.data(), y.data(), n, q.data());
    EXPECT_TRUE(SameBits(p, q)) << "AddArraysMasked n=" << n;
  }
}

// The fused residual sum is the sum, then the relu's mask: the same bits.
TEST(ElementwiseKernels, MaskedSumIsTheSumMasked) {
  for (size_t n : {1u, 16u, 33u, 1000u}) {
    std::vector<float> a = Random(n, 4), b = Random(n, 5), y = Random(n, 6);
    a[0] = std::nanf("");
    std::vector<float> sum(n), want(n), got(n);
    AddArrays(a.data(), b.data(), n, false, sum.data());
    ReluMask(sum.data(), y.data(), n, want.data());
    AddArraysMasked(a.data(), b.data(), y.data(), n, got.data());
    EXPECT_TRUE(SameBits(want, got)) << "n=" << n;
    AddArraysMasked(a.data(), b.data(), y.data(), n, a.data());  // in place
    EXPECT_TRUE(SameBits(want, a)) << "in place, n=" << n;
  }
}

TEST(ElementwiseKernels, ComputeWhatTheySay) {
  const std::vector<float> a = {1, -2, 3, std::nanf("")}, b = {0.5f, 1, -4, 1};
  std::vector<float> out(4);
  AddArrays(a.data(), b.data(), 4, false, out.data());
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  AddArrays(a.data(), b.data(), 4, true, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.5f, 0, 0, 0}));  // NaN is not > 0
  std::vector<float> acc = {1, 1, 1, 1};
  AccumulateArray(acc.data(), b.data(), 4);
  EXPECT_EQ(acc, (std::vector<float>{1.5f, 2, -3, 2}));
  ReluMask(b.data(), a.data(), 4, out.data());
  EXPECT_EQ(out, (std::vector<float>{0.5f, 0, -4, 0}));
}

}  // namespace
}  // namespace ringtrain::kernels
