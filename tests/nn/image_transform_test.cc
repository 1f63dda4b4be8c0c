// TF's ImageProjectiveTransformV3 as ringtrain reproduces it (backends/cpu/image_transform.h),
// against references written here from TF's documented semantics: the fill modes
//   reflect (d c b a | a b c d | d c b a), wrap (a b c d | a b c d | a b c d),
//   nearest (a a a a | a b c d | d d d d), constant (k k k k | a b c d | k k k k)
// and "output pixel (x, y) samples the input at the transformed point".
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/image_transform.h"
#include "test_util.h"

namespace ringtrain::nn {
namespace {

using backends::cpu::FillMode;
using backends::cpu::Interpolation;
using backends::cpu::MapCoordinate;
using backends::cpu::ProjectiveSampler;

// The documented extension of a row of n pixels to integer position s; -1 for the
// constant fill.
int64_t DocIndex(FillMode mode, int64_t s, int64_t n) {
  if (s >= 0 && s < n) return s;
  switch (mode) {
    case FillMode::kConstant:
      return -1;
    case FillMode::kNearest:
      return s < 0 ? 0 : n - 1;
    case FillMode::kWrap:
      return ((s % n) + n) % n;
    case FillMode::kReflect: {
      const int64_t m = ((s % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
  }
  return -1;
}

TEST(MapCoordinateTest, FillModesFollowTheDocumentedPatterns) {
  for (int64_t n : {2, 3, 4, 7}) {
    for (int64_t s = -3 * n; s <= 3 * n; ++s) {
      for (FillMode mode : {FillMode::kReflect, FillMode::kNearest}) {
        EXPECT_EQ(MapCoordinate(mode, static_cast<float>(s), n), static_cast<float>(DocIndex(mode, s, n)))
            << "mode " << static_cast<int>(mode) << " n " << n << " s " << s;
      }
      // TF's wrap divides by n - 1 (its scipy heritage): it follows the pattern while
      // -(n - 1) < s < 2 (n - 1), which covers every shift smaller than the image.
      if (s > -(n - 1) && s < 2 * (n - 1)) {
        EXPECT_EQ(MapCoordinate(FillMode::kWrap, static_cast<float>(s), n),
                  static_cast<float>(DocIndex(FillMode::kWrap, s, n)))
            << "wrap n " << n << " s " << s;
      }
      EXPECT_EQ(MapCoordinate(FillMode::kConstant, static_cast<float>(s), n), static_cast<float>(s));
    }
  }
  // TF's kernel, pinned: wrap(-3) of 4 pixels lands on 5 and is clamped to 3.
  EXPECT_EQ(MapCoordinate(FillMode::kWrap, -3.0f, 4), 3.0f);
  // Fractional positions: reflect 3.5 of 4 stays inside (clamped for nearest rounding).
  EXPECT_EQ(MapCoordinate(FillMode::kReflect, 3.5f, 4), 3.0f);
  EXPECT_EQ(MapCoordinate(FillMode::kReflect, -0.25f, 4), 0.0f);  // -(-0.25) - 1 -> clamped
  EXPECT_EQ(MapCoordinate(FillMode::kNearest, 9.75f, 4), 3.0f);
  // One pixel: everything maps to it.
  EXPECT_EQ(MapCoordinate(FillMode::kReflect, -5.0f, 1), 0.0f);
  EXPECT_EQ(MapCoordinate(FillMode::kWrap, 5.0f, 1), 0.0f);
}

ProjectiveSampler Sampler(int h, int w, int c, FillMode mode, Interpolation interp) {
  ProjectiveSampler s;
  s.height = h;
  s.width = w;
  s.channels = c;
  s.fill_mode = mode;
  s.interpolation = interp;
  return s;
}

// A 1 x 4 row [1 2 3 4] shifted right by 3 and left by 3 (Keras' translation matrix
// [1, 0, -dx, 0, 1, -dy, 0, 0]), nearest and bilinear alike (whole pixels).
TEST(ProjectiveSamplerTest, CraftedRowShiftsMatchTheDocumentedFills) {
  const std::vector<float> row = {1, 2, 3, 4};
  const std::vector<float> fill = {9};
  struct Case {
    FillMode mode;
    float dx;
    std::vector<float> want;
  } cases[] = {
      {FillMode::kReflect, 3, {3, 2, 1, 1}},  {FillMode::kReflect, -3, {4, 4, 3, 2}},
      {FillMode::kWrap, 2, {3, 4, 1, 2}},     {FillMode::kWrap, -2, {3, 4, 1, 2}},
      {FillMode::kNearest, 3, {1, 1, 1, 1}},  {FillMode::kNearest, -2, {3, 4, 4, 4}},
      {FillMode::kConstant, 3, {9, 9, 9, 1}}, {FillMode::kConstant, -1, {2, 3, 4, 9}},
  };
  for (const Case& c : cases) {
    for (Interpolation interp : {Interpolation::kNearest, Interpolation::kBilinear}) {
      const float t[8] = {1, 0, -c.dx, 0, 1, 0, 0, 0};
      std::vector<float> out(4);
      Sampler(1, 4, 1, c.mode, interp).Forward(t, row.data(), fill.data(), out.data());
      EXPECT_EQ(out, c.want) << "mode " << static_cast<int>(c.mode) << " dx " << c.dx;
    }
  }
}

// Whole-pixel 2-D shifts of a random image against the reference, every fill mode.
TEST(ProjectiveSamplerTest, WholePixelShiftsAreExact) {
  const int h = 5, w = 6, ch = 3;
  const std::vector<float> img = testing::RandomVector(h * w * ch, 3);
  const std::vector<float> fill(ch, -7.5f);
  for (FillMode mode : {FillMode::kReflect, FillMode::kWrap, FillMode::kNearest, FillMode::kConstant}) {
    for (Interpolation interp : {Interpolation::kNearest, Interpolation::kBilinear}) {
      for (int dy = -(h - 2); dy <= h - 2; ++dy) {
        for (int dx = -(w - 2); dx <= w - 2; ++dx) {
          const float t[8] = {1, 0, static_cast<float>(-dx), 0, 1, static_cast<float>(-dy), 0, 0};
          std::vector<float> out(img.size());
          Sampler(h, w, ch, mode, interp).Forward(t, img.data(), fill.data(), out.data());
          for (int y = 0; y < h; ++y) {
            for (int x = 0; x < w; ++x) {
              const int64_t sy = DocIndex(mode, y - dy, h), sx = DocIndex(mode, x - dx, w);
              for (int k = 0; k < ch; ++k) {
                const float want = (sy < 0 || sx < 0) ? fill[k] : img[(sy * w + sx) * ch + k];
                ASSERT_EQ(out[(y * w + x) * ch + k], want)
                    << "mode " << static_cast<int>(mode) << " dy " << dy << " dx " << dx << " at " << y << "," << x;
              }
            }
          }
        }
      }
    }
  }
}

// Bilinear at a half pixel: TF's weights (x_ceil - x, x - x_floor), a tap outside the
// image reading fill_value in constant mode.
TEST(ProjectiveSamplerTest, BilinearHalfPixelShift) {
  const std::vector<float> row = {1, 2, 4, 8};
  const std::vector<float> fill = {10};
  const float t[8] = {1, 0, -0.5f, 0, 1, 0, 0, 0};  // samples x - 0.5
  std::vector<float> out(4);
  Sampler(1, 4, 1, FillMode::kConstant, Interpolation::kBilinear).Forward(t, row.data(), fill.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{5.5f, 1.5f, 3, 6}));  // (10 + 1) / 2, (1 + 2) / 2, ...
  // nearest: x - 0.5 rounds half away from zero: -0.5 -> -1 (fill), 0.5 -> 1, 1.5 -> 2, 2.5 -> 3.
  Sampler(1, 4, 1, FillMode::kConstant, Interpolation::kNearest).Forward(t, row.data(), fill.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{10, 2, 4, 8}));
  // reflect: -0.5 maps to -(-0.5) - 1 = -0.5, clamped to 0.
  Sampler(1, 4, 1, FillMode::kReflect, Interpolation::kBilinear).Forward(t, row.data(), fill.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 1.5f, 3, 6}));
}

// A projective row whose k is 0 at an output pixel yields fill_value there.
TEST(ProjectiveSamplerTest, ZeroProjectionIsFill) {
  const std::vector<float> row = {1, 2, 3, 4};
  const std::vector<float> fill = {-1};
  const float t[8] = {1, 0, 0, 0, 1, 0, -0.5f, 0};  // k = 1 - x / 2: 0 at x = 2
  std::vector<float> out(4);
  Sampler(1, 4, 1, FillMode::kNearest, Interpolation::kNearest).Forward(t, row.data(), fill.data(), out.data());
  EXPECT_EQ(out[2], -1.0f);
  EXPECT_EQ(out[0], 1.0f);
}

// <T x, y> == <x, T^T y> for rotations and fractional shifts, every mode and
// interpolation (fill_value 0, so T is linear).
TEST(ProjectiveSamplerTest, AdjointIsTheTranspose) {
  const int h = 7, w = 5, ch = 2;
  const std::vector<float> x = testing::RandomVector(h * w * ch, 11);
  const std::vector<float> y = testing::RandomVector(h * w * ch, 12);
  const std::vector<float> zero(ch, 0.0f);
  const float a = 0.7f, c = std::cos(a), s = std::sin(a);
  const float transforms[][8] = {
      {c, -s, 1.3f, s, c, -0.8f, 0, 0},
      {1, 0, 2.25f, 0, 1, -3.6f, 0, 0},
      {0.9f, 0.2f, -0.4f, -0.1f, 1.1f, 0.3f, 0.01f, -0.02f},
  };
  for (const auto& t : transforms) {
    for (FillMode mode : {FillMode::kReflect, FillMode::kWrap, FillMode::kNearest, FillMode::kConstant}) {
      for (Interpolation interp : {Interpolation::kNearest, Interpolation::kBilinear}) {
        const ProjectiveSampler smp = Sampler(h, w, ch, mode, interp);
        std::vector<float> tx(x.size()), tty(x.size(), 0.0f), sink(ch, 0.0f);
        smp.Forward(t, x.data(), zero.data(), tx.data());
        smp.AddAdjoint(t, y.data(), tty.data(), sink.data());
        double lhs = 0, rhs = 0;
        for (size_t i = 0; i < x.size(); ++i) {
          lhs += static_cast<double>(tx[i]) * y[i];
          rhs += static_cast<double>(x[i]) * tty[i];
        }
        EXPECT_NEAR(lhs, rhs, 1e-5 * (1 + std::abs(lhs))) << "mode " << static_cast<int>(mode);
      }
    }
  }
}

}  // namespace
}  // namespace ringtrain::nn
