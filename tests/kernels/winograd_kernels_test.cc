// The Winograd F(2x2, 3x3) and F(4x4, 3x3) paths of the AVX-512 convolution against a
// double-precision reference, against the direct tiles, and for determinism.
//
// Bound: 1e-5 of the output's scale (ExpectClose), for both tile sizes. F(4,3)'s transforms
// have larger coefficients (B^T up to 5, A^T up to 8, G's 1/6 and 1/24 are inexact), so
// its rounding is about 10x F(2,3)'s: measured 2e-6 to 7e-6 of the scale on ResNet-like
// data (relu'd normal inputs, He-normal weights, c = f = 16..64, every pass), against
// 2e-7 to 7e-7 for F(2,3) and the direct tiles; with |x| <= 1, |w| <= 0.3 and c <= 40 here
// it stays under the same 1e-5. The F(2,3) argument: Winograd rounds differently from the
// direct sum but not much worse: F(2,3)'s transforms have coefficients 0, +-1 and +-1/2
// (exact scalings in binary), each transform adds at most 4 terms per dimension, so a
// result carries a few ulps of the transformed terms' magnitude on top of the dot
// product's own ~c*9 accumulated roundings; for |x|, |w| <= 1 and c <= 40 that stays
// orders of magnitude under 1e-5 of the scale (fp32 ulp: 6e-8), as it does for the direct path.
#include <algorithm>
#include <sstream>

#include "kernel_test_util.h"
#include "kernels/winograd.h"

namespace ringtrain::kernels {
namespace {

// Parameter: F(2x2, 3x3) or F(4x4, 3x3).
class Winograd : public ::testing::TestWithParam<ConvAlgo> {
 protected:
  void SetUp() override {
    SetForcePortable(false);
    if (!UseAvx512()) GTEST_SKIP() << "this CPU has no AVX-512F (or RINGTRAIN_KERNELS=portable)";
    SetConvAlgo(GetParam());
    SetNumThreads(1);
  }
  void TearDown() override {
    SetConvAlgo(ConvAlgo::kAuto);
    SetNumThreads(1);
  }
};

struct Shape {
  int h, w, c, f;
  bool same;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> out;
  const int hw[][2] = {{1, 1}, {3, 5}, {7, 7}, {8, 8}, {6, 9}, {9, 6}, {5, 3}};
  for (const auto& s : hw) {
    for (int c : {5, 17, 33}) {
      for (int f : {7, 16, 40}) {
        for (bool same : {true, false}) {
          if (!same && (s[0] < 3 || s[1] < 3)) continue;
          out.push_back({s[0], s[1], c, f, same});
        }
      }
    }
  }
  return out;
}

Window Of(const Shape& s) { return MakeTestWindow(s.h, s.w, s.c, 3, 3, 1, 1, s.same); }

// Calls fn(o, n, oh, ow, f, x-index or -1, w-index) for every product of the convolution.
template <typename Fn>
void EachProduct(const Window& g, int F, int batch, Fn fn) {
  size_t o = 0;
  for (int n = 0; n < batch; ++n) {
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow) {
        for (int f = 0; f < F; ++f, ++o) {
          for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
              const int ih = oh - g.pad_top + i, iw = ow - g.pad_left + j;
              const bool in = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
              for (int c = 0; c < g.c; ++c) {
                const long xi = in ? static_cast<long>(((static_cast<size_t>(n) * g.h + ih) * g.w + iw) * g.c + c) : -1;
                fn(o, f, xi, ((static_cast<size_t>(i) * 3 + j) * g.c + c) * F + f);
              }
            }
          }
        }
      }
    }
  }
}

TEST_P(Winograd, EveryPassMatchesReference) {
  int k = 0;
  for (const Shape& s : Shapes()) {
    const Window g = Of(s);
    const int F = s.f, batch = k % 2 == 0 ? 1 : 3;
    const bool bias_on = k % 3 != 0, relu = k % 4 < 2;
    ++k;
    const std::string what = "h" + std::to_string(s.h) + " w" + std::to_string(s.w) + " c" + std::to_string(s.c) +
                             " f" + std::to_string(F) + (s.same ? " same" : " valid") + " batch " +
                             std::to_string(batch) + (bias_on ? " bias" : "") + (relu ? " relu" : "");
    const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * F;
    auto x = Random(batch * g.in_size(), 31 + k);
    auto w = Random(static_cast<size_t>(9) * g.c * F, 32 + k, -0.3f, 0.3f);
    auto b = Random(static_cast<size_t>(F), 33 + k);
    auto dy = Random(outputs, 34 + k);
    // Forward.
    std::vector<float> y(outputs, 99.0f), scratch(ConvForwardScratch(g, F, batch), 7.0f);
    ConvForward(g, F, x.data(), batch, w.data(), bias_on ? b.data() : nullptr, relu, y.data(), scratch.data());
    std::vector<double> want(outputs);
    for (size_t o = 0; o < outputs; ++o) want[o] = bias_on ? b[o % F] : 0.0;
    EachProduct(g, F, batch, [&](size_t o, int, long xi, size_t wi) {
      if (xi >= 0) want[o] += static_cast<double>(x[xi]) * w[wi];
    });
    if (relu) {
      for (double& v : want) v = std::max(v, 0.0);
    }
    ExpectClose(y, want, 1e-5, what + " forward");
    // Filter gradient (relu reads the forward's y) and input gradient.
    std::vector<double> want_dpre(outputs), want_dw(w.size(), 0.0), want_db(F, 0.0), want_dx(x.size(), 0.0);
    for (size_t o = 0; o < outputs; ++o) want_dpre[o] = !relu || y[o] > 0.0f ? dy[o] : 0.0;
    for (size_t o = 0; o < outputs; ++o) want_db[o % F] += want_dpre[o];
    EachProduct(g, F, batch, [&](size_t o, int, long xi, size_t wi) {
      if (xi < 0) return;
      want_dw[wi] += static_cast<double>(x[xi]) * want_dpre[o];
      want_dx[xi] += want_dpre[o] * w[wi];
    });
    std::vector<float> dw(w.size(), 99.0f), db(F, 99.0f), dpre(outputs, 99.0f);
    std::vector<float> gscratch(ConvFilterGradScratch(g, F, batch), 7.0f);
    ConvFilterGrad(g, F, x.data(), relu ? y.data() : nullptr, dy.data(), batch, relu, dw.data(), db.data(),
                   dpre.data(), gscratch.data());
    ExpectClose(dpre, want_dpre, 0, what + " dpre");
    ExpectClose(dw, want_dw, 1e-5, what + " dw");
    ExpectClose(db, want_db, 1e-5, what + " db");
    std::vector<float> dx(x.size(), 99.0f), iscratch(ConvInputGradScratch(g, F, batch), 7.0f);
    ConvInputGrad(g, F, dpre.data(), w.data(), batch, dx.data(), iscratch.data());
    ExpectClose(dx, want_dx, 1e-5, what + " dx");
  }
}

struct Passes {
  std::vector<float> y, dw, db, dpre, dx;
  bool operator==(const Passes& o) const {
    return y == o.y && dw == o.dw && db == o.db && dpre == o.dpre && dx == o.dx;
  }
};

Passes RunAll(const Window& g, int F, int batch, bool after_forward) {
  auto x = Random(batch * g.in_size(), 41);
  auto w = Random(static_cast<size_t>(9) * g.c * F, 42, -0.3f, 0.3f);
  auto b = Random(static_cast<size_t>(F), 43);
  const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * F;
  auto dy = Random(outputs, 44);
  Passes p{std::vector<float>(outputs), std::vector<float>(w.size()), std::vector<float>(F),
           std::vector<float>(outputs), std::vector<float>(x.size())};
  std::vector<float> scratch(std::max({ConvForwardScratch(g, F, batch), ConvFilterGradScratch(g, F, batch),
                                       ConvInputGradScratch(g, F, batch)}),
                             7.0f);
  ConvForward(g, F, x.data(), batch, w.data(), b.data(), true, p.y.data(), scratch.data());
  if (after_forward) {
    ConvFilterGradAfterForward(g, F, x.data(), p.y.data(), dy.data(), batch, true, p.dw.data(), p.db.data(),
                               p.dpre.data(), scratch.data());
  } else {
    std::vector<float> fresh(scratch.size(), 5.0f);
    ConvFilterGrad(g, F, x.data(), p.y.data(), dy.data(), batch, true, p.dw.data(), p.db.data(), p.dpre.data(),
                   fresh.data());
  }
  ConvInputGrad(g, F, p.dpre.data(), w.data(), batch, p.dx.data(), scratch.data());
  return p;
}

// Many slots and blocks (batch 19 of 18x18 with 40 channels: several blocks per example).
TEST_P(Winograd, SameBitsForAnyThreadCountAndRun) {
  for (const Shape& s : {Shape{18, 18, 40, 24, true}, Shape{7, 9, 17, 16, false}, Shape{32, 32, 16, 16, true}}) {
    const Window g = Of(s);
    const int batch = s.h == 32 ? 4 : 19;
    const Passes one = RunAll(g, s.f, batch, false);
    EXPECT_TRUE(one == RunAll(g, s.f, batch, false)) << "run twice, c" << s.c;
    for (int threads : {2, 3}) {
      SetNumThreads(threads);
      EXPECT_TRUE(one == RunAll(g, s.f, batch, false)) << threads << " threads, c" << s.c;
    }
    SetNumThreads(1);
  }
}

TEST_P(Winograd, FilterGradAfterForwardSameBits) {
  for (const Shape& s : {Shape{8, 8, 33, 40, true}, Shape{7, 7, 17, 7, false}}) {
    for (ConvAlgo algo : {GetParam(), ConvAlgo::kAuto}) {
      SetConvAlgo(algo);
      const Passes a = RunAll(Of(s), s.f, 3, false), b = RunAll(Of(s), s.f, 3, true);
      EXPECT_EQ(a.dw, b.dw) << "c" << s.c;
      EXPECT_EQ(a.db, b.db) << "c" << s.c;
      EXPECT_EQ(a.dpre, b.dpre) << "c" << s.c;
    }
  }
}

// A convolution without a bias passes no db, and one whose gradient the caller does not keep
// passes no dpre: the Winograd gradient transform then sums no bias gradient, and the direct
// tiles' later passes read dy itself where there is no relu. dw keeps its bits either way;
// the direct tiles are checked on strided and 1x1 windows too (several passes over the taps).
TEST_P(Winograd, FilterGradWithoutBiasOrDpreKeepsTheBits) {
  struct Case {
    Window g;
    int f;
  };
  const std::vector<Case> cases = {{Of(Shape{32, 32, 16, 16, true}), 16},
                                   {Of(Shape{8, 8, 17, 40, true}), 40},
                                   {Of(Shape{7, 9, 17, 16, false}), 16},
                                   {MakeTestWindow(16, 16, 16, 3, 3, 2, 2, true), 32},
                                   {MakeTestWindow(16, 16, 16, 1, 1, 2, 2, true), 32}};
  for (ConvAlgo algo : {GetParam(), ConvAlgo::kDirect}) {
    SetConvAlgo(algo);
    for (const Case& k : cases) {
      const Window& g = k.g;
      const int batch = 3;
      const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * k.f;
      const auto x = Random(batch * g.in_size(), 51);
      const auto dy = Random(outputs, 52);
      auto y = Random(outputs, 53);  // a relu's output: about half of it zero
      for (float& v : y) v = std::max(v, 0.0f);
      for (bool relu : {false, true}) {
        std::ostringstream what;
        what << (algo == ConvAlgo::kDirect ? "direct" : "winograd") << " c" << g.c << " f" << k.f << " stride "
             << g.stride_h << " k" << g.kh << (relu ? " relu" : "");
        const size_t taps = static_cast<size_t>(g.kh) * g.kw * g.c * k.f;
        std::vector<float> dw_full(taps, 9.0f), db(k.f, 9.0f), dpre(outputs, 9.0f), dw_bare(taps, 8.0f);
        std::vector<float> scratch(ConvFilterGradScratch(g, k.f, batch), 7.0f);
        ConvFilterGrad(g, k.f, x.data(), relu ? y.data() : nullptr, dy.data(), batch, relu, dw_full.data(), db.data(),
                       dpre.data(), scratch.data());
        std::fill(scratch.begin(), scratch.end(), 6.0f);
        ConvFilterGrad(g, k.f, x.data(), relu ? y.data() : nullptr, dy.data(), batch, relu, dw_bare.data(), nullptr,
                       nullptr, scratch.data());
        EXPECT_EQ(dw_full, dw_bare) << what.str();
        if (!relu) {
          EXPECT_EQ(dpre, dy) << what.str() << ": without a relu dpre is dy";
        }
      }
    }
  }
}

std::vector<double> Widen(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

TEST_P(Winograd, AgreesWithDirectTiles) {
  for (const Shape& s : {Shape{16, 16, 32, 32, true}, Shape{9, 6, 17, 40, true}, Shape{8, 8, 64, 64, false}}) {
    const Window g = Of(s);
    SetConvAlgo(ConvAlgo::kDirect);
    const Passes direct = RunAll(g, s.f, 3, false);
    SetConvAlgo(GetParam());
    const Passes wino = RunAll(g, s.f, 3, false);
    const std::string what = "c" + std::to_string(s.c) + " f" + std::to_string(s.f);
    ExpectClose(wino.y, Widen(direct.y), 1e-5, what + " y");
    ExpectClose(wino.dw, Widen(direct.dw), 1e-5, what + " dw");
    ExpectClose(wino.db, Widen(direct.db), 1e-5, what + " db");
    ExpectClose(wino.dx, Widen(direct.dx), 1e-5, what + " dx");
    EXPECT_FALSE(wino.y == direct.y) << "both runs took the same path";
  }
}

INSTANTIATE_TEST_SUITE_P(Tiles, Winograd, ::testing::Values(ConvAlgo::kWinograd2, ConvAlgo::kWinograd4),
                         [](const ::testing::TestParamInfo<ConvAlgo>& info) {
                           return info.param == ConvAlgo::kWinograd2 ? std::string("F2x2") : std::string("F4x4");
                         });

TEST(WinogradPlan, TileFollowsTheSwitch) {
  const Window g = MakeTestWindow(16, 16, 32, 3, 3, 1, 1, true);
  SetConvAlgo(ConvAlgo::kWinograd2);
  EXPECT_EQ(WinogradTile(g, 32, ConvPass::kForward), 2);
  SetConvAlgo(ConvAlgo::kWinograd4);
  EXPECT_EQ(WinogradTile(g, 32, ConvPass::kForward), 4);
  EXPECT_EQ(WinogradTile(MakeTestWindow(16, 16, 32, 3, 3, 2, 2, true), 32, ConvPass::kForward), 0);
  // winograd: Winograd wherever it applies, also where auto keeps the direct tiles.
  SetConvAlgo(ConvAlgo::kWinograd);
  EXPECT_NE(WinogradTile(MakeTestWindow(32, 32, 3, 3, 3, 1, 1, true), 16, ConvPass::kForward), 0);
  // A block may span examples: 3x3 outputs of batch 5 with F(4,3) are 5 one-tile examples.
  const WinogradPlan p = PlanWinograd(MakeTestWindow(3, 3, 8, 3, 3, 1, 1, true), 8, 5, ConvPass::kForward, 4);
  EXPECT_EQ(p.tiles, 1);
  EXPECT_EQ(p.planes, 36);
  EXPECT_EQ(static_cast<int64_t>(p.units) * p.block >= 5, true);
  EXPECT_GT(p.block, 1);
  SetConvAlgo(ConvAlgo::kAuto);
}

TEST(WinogradPlan, AutoKeepsFewChannelsDirect) {
  SetConvAlgo(ConvAlgo::kAuto);
  const Window first = MakeTestWindow(32, 32, 3, 3, 3, 1, 1, true);
  if (CurrentConvAlgo() == ConvAlgo::kAuto) {
    EXPECT_FALSE(UseWinograd(first, 16, ConvPass::kForward));
  }
  if (CurrentConvAlgo() == ConvAlgo::kAuto) {
    // F(4,3) on ResNet-20's planes, F(2,3) on small planes and wide layers.
    const Window resnet = MakeTestWindow(16, 16, 32, 3, 3, 1, 1, true);
    EXPECT_EQ(WinogradTile(resnet, 32, ConvPass::kForward), 4);
    EXPECT_EQ(WinogradTile(resnet, 32, ConvPass::kFilterGrad), 4);
    EXPECT_EQ(WinogradTile(MakeTestWindow(4, 4, 64, 3, 3, 1, 1, true), 64, ConvPass::kForward), 2);
    EXPECT_EQ(WinogradTile(MakeTestWindow(14, 14, 256, 3, 3, 1, 1, true), 256, ConvPass::kForward), 2);
    EXPECT_EQ(WinogradTile(MakeTestWindow(28, 28, 128, 3, 3, 1, 1, true), 128, ConvPass::kForward), 4);
    EXPECT_EQ(WinogradTile(MakeTestWindow(28, 28, 128, 3, 3, 1, 1, true), 128, ConvPass::kFilterGrad), 2);
  }
  SetConvAlgo(ConvAlgo::kDirect);
  EXPECT_FALSE(UseWinograd(MakeTestWindow(16, 16, 32, 3, 3, 1, 1, true), 32, ConvPass::kForward));
  SetConvAlgo(ConvAlgo::kWinograd);
  EXPECT_TRUE(UseWinograd(MakeTestWindow(16, 16, 32, 3, 3, 1, 1, true), 32, ConvPass::kForward));
  EXPECT_FALSE(UseWinograd(MakeTestWindow(16, 16, 32, 3, 3, 2, 2, true), 32, ConvPass::kForward));
  EXPECT_FALSE(UseWinograd(MakeTestWindow(16, 16, 32, 5, 5, 1, 1, true), 32, ConvPass::kForward));
  SetConvAlgo(ConvAlgo::kAuto);
}

}  // namespace
}  // namespace ringtrain::kernels
