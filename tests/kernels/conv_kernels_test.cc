#include <algorithm>

#include "kernel_test_util.h"

namespace ringtrain::kernels {
namespace {

struct ConvCase {
  Window g;
  int filters;
};

// 'valid' 3x3 on one channel (the seeds' first layer), 'same' padding, strides,
// many channels (the seeds' second conv), filter counts off the vector width.
Window Make(int h, int w, int c, int kh, int kw, int sh, int sw, bool same) {
  return MakeTestWindow(h, w, c, kh, kw, sh, sw, same);
}

const ConvCase kCases[] = {
    {Make(28, 28, 1, 3, 3, 1, 1, false), 32}, {Make(13, 13, 32, 3, 3, 1, 1, false), 64},
    {Make(9, 7, 3, 3, 3, 1, 1, true), 20},    {Make(10, 11, 2, 5, 3, 2, 3, true), 70},
    {Make(6, 6, 4, 1, 1, 1, 1, false), 5},    {Make(8, 8, 1, 2, 2, 2, 2, false), 16},
    // The 3-wide tiles: one filter vector (16, 5 filters), stride 2 'same' and 'valid'
    // (even and odd widths), rows wider than one pixel tile, channels off the pass width.
    {Make(7, 37, 16, 3, 3, 1, 1, true), 16},  {Make(6, 19, 9, 3, 3, 1, 1, false), 5},
    {Make(12, 12, 16, 3, 3, 2, 2, true), 16}, {Make(11, 13, 5, 3, 3, 2, 2, true), 20},
    {Make(9, 10, 7, 3, 3, 2, 2, false), 33},  {Make(10, 9, 3, 3, 3, 2, 1, true), 40},
    // Strided input gradients whose parity classes get no taps (1x1 stride 2; 2x2 stride 3).
    {Make(7, 9, 6, 1, 1, 2, 2, false), 12},   {Make(11, 10, 4, 2, 2, 3, 3, true), 17},
};

float At(const std::vector<float>& x, const Window& g, int n, int ih, int iw, int c) {
  if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) return 0.0f;
  return x[((static_cast<size_t>(n) * g.h + ih) * g.w + iw) * g.c + c];
}

class ConvKernels : public KernelTest {};

TEST_P(ConvKernels, ForwardMatchesReference) {
  const int batch = 3;
  for (const ConvCase& cc : kCases) {
    const Window& g = cc.g;
    const int F = cc.filters;
    auto x = Random(batch * g.in_size(), 11);
    auto w = Random(static_cast<size_t>(g.kh) * g.kw * g.c * F, 12, -0.3f, 0.3f);
    auto b = Random(static_cast<size_t>(F), 13);
    std::vector<float> y(static_cast<size_t>(batch) * g.out_h * g.out_w * F, 99.0f);
    std::vector<float> scratch(ConvForwardScratch(g, F, batch));
    ConvForward(g, F, x.data(), batch, w.data(), b.data(), true, y.data(), scratch.data());
    std::vector<double> want(y.size());
    size_t o = 0;
    for (int n = 0; n < batch; ++n) {
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow) {
          for (int f = 0; f < F; ++f, ++o) {
            double acc = b[f];
            for (int i = 0; i < g.kh; ++i) {
              for (int j = 0; j < g.kw; ++j) {
                for (int c = 0; c < g.c; ++c) {
                  acc += static_cast<double>(At(x, g, n, oh * g.stride_h - g.pad_top + i, ow * g.stride_w - g.pad_left + j, c)) *
                         w[((static_cast<size_t>(i) * g.kw + j) * g.c + c) * F + f];
                }
              }
            }
            want[o] = std::max(acc, 0.0);
          }
        }
      }
    }
    ExpectClose(y, want, 1e-5, "conv forward F=" + std::to_string(F));
  }
}

TEST_P(ConvKernels, GradientsMatchReference) {
  const int batch = 3;
  for (const ConvCase& cc : kCases) {
    const Window& g = cc.g;
    const int F = cc.filters;
    const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * F;
    auto x = Random(batch * g.in_size(), 14);
    auto y = Random(outputs, 15);  // stands for the layer's output: about half not positive
    auto dy = Random(outputs, 16);
    auto w = Random(static_cast<size_t>(g.kh) * g.kw * g.c * F, 17);
    std::vector<float> dw(w.size(), 99.0f), db(static_cast<size_t>(F), 99.0f), dpre(outputs, 99.0f);
    std::vector<float> scratch(ConvFilterGradScratch(g, F, batch));
    ConvFilterGrad(g, F, x.data(), y.data(), dy.data(), batch, true, dw.data(), db.data(), dpre.data(), scratch.data());
    std::vector<double> want_dpre(outputs), want_dw(dw.size(), 0.0), want_db(db.size(), 0.0), want_dx(x.size(), 0.0);
    for (size_t i = 0; i < outputs; ++i) want_dpre[i] = y[i] > 0.0f ? dy[i] : 0.0;
    size_t o = 0;
    for (int n = 0; n < batch; ++n) {
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow) {
          for (int f = 0; f < F; ++f, ++o) {
            want_db[f] += want_dpre[o];
            for (int i = 0; i < g.kh; ++i) {
              for (int j = 0; j < g.kw; ++j) {
                const int ih = oh * g.stride_h - g.pad_top + i, iw = ow * g.stride_w - g.pad_left + j;
                for (int c = 0; c < g.c; ++c) {
                  const size_t wi = ((static_cast<size_t>(i) * g.kw + j) * g.c + c) * F + f;
                  want_dw[wi] += static_cast<double>(At(x, g, n, ih, iw, c)) * want_dpre[o];
                  if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w) {
                    want_dx[((static_cast<size_t>(n) * g.h + ih) * g.w + iw) * g.c + c] += want_dpre[o] * w[wi];
                  }
                }
              }
            }
          }
        }
      }
    }
    const std::string what = "conv F=" + std::to_string(F) + " C=" + std::to_string(g.c);
    ExpectClose(dpre, want_dpre, 0, what + " dpre");
    ExpectClose(dw, want_dw, 1e-5, what + " dw");
    ExpectClose(db, want_db, 1e-5, what + " db");
    std::vector<float> dx(x.size(), 99.0f), dx_scratch(ConvInputGradScratch(g, F, batch));
    ConvInputGrad(g, F, dpre.data(), w.data(), batch, dx.data(), dx_scratch.data());
    ExpectClose(dx, want_dx, 1e-5, what + " dx");
    // Without a dpre buffer and without relu the gradient passes through unmasked.
    ConvFilterGrad(g, F, x.data(), nullptr, dy.data(), batch, false, dw.data(), nullptr, nullptr, scratch.data());
    std::vector<double> want_dw_linear(dw.size(), 0.0);
    o = 0;
    for (int n = 0; n < batch; ++n) {
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow) {
          for (int f = 0; f < F; ++f, ++o) {
            for (int i = 0; i < g.kh; ++i) {
              for (int j = 0; j < g.kw; ++j) {
                for (int c = 0; c < g.c; ++c) {
                  want_dw_linear[((static_cast<size_t>(i) * g.kw + j) * g.c + c) * F + f] +=
                      static_cast<double>(At(x, g, n, oh * g.stride_h - g.pad_top + i, ow * g.stride_w - g.pad_left + j, c)) * dy[o];
                }
              }
            }
          }
        }
      }
    }
    ExpectClose(dw, want_dw_linear, 1e-5, what + " dw linear");
  }
}

// ConvFilterGradAfterForward reuses what ConvForward left in the scratch (AVX-512: the
// padded input) and must give ConvFilterGrad's bits, padding or not, strided or not.
TEST_P(ConvKernels, FilterGradAfterForwardSameBits) {
  const int batch = 3;
  for (const ConvCase& cc : kCases) {
    const Window& g = cc.g;
    const int F = cc.filters;
    const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * F;
    auto x = Random(batch * g.in_size(), 21);
    auto w = Random(static_cast<size_t>(g.kh) * g.kw * g.c * F, 22, -0.3f, 0.3f);
    auto dy = Random(outputs, 23);
    std::vector<float> y(outputs);
    std::vector<float> scratch(std::max(ConvForwardScratch(g, F, batch), ConvFilterGradScratch(g, F, batch)), 7.0f);
    std::vector<float> fresh(scratch.size(), 7.0f);
    ConvForward(g, F, x.data(), batch, w.data(), nullptr, true, y.data(), scratch.data());
    std::vector<float> dw1(w.size()), db1(static_cast<size_t>(F)), dpre1(outputs);
    std::vector<float> dw2(w.size()), db2(static_cast<size_t>(F)), dpre2(outputs);
    ConvFilterGrad(g, F, x.data(), y.data(), dy.data(), batch, true, dw1.data(), db1.data(), dpre1.data(), fresh.data());
    ConvFilterGradAfterForward(g, F, x.data(), y.data(), dy.data(), batch, true, dw2.data(), db2.data(), dpre2.data(),
                               scratch.data());
    EXPECT_EQ(dw1, dw2) << "F=" << F;
    EXPECT_EQ(db1, db2) << "F=" << F;
    EXPECT_EQ(dpre1, dpre2) << "F=" << F;
  }
}

TEST_P(ConvKernels, SameBitsForAnyThreadCount) {
  const ConvCase& cc = kCases[0];
  const int batch = 8, F = cc.filters;
  const size_t outputs = static_cast<size_t>(batch) * cc.g.out_h * cc.g.out_w * F;
  auto x = Random(batch * cc.g.in_size(), 18);
  auto w = Random(static_cast<size_t>(9 * F), 19);
  auto dy = Random(outputs, 20);
  auto run = [&] {
    std::vector<float> y(outputs), dw(w.size()), db(static_cast<size_t>(F));
    std::vector<float> s1(ConvForwardScratch(cc.g, F, batch)), s2(ConvFilterGradScratch(cc.g, F, batch));
    ConvForward(cc.g, F, x.data(), batch, w.data(), nullptr, true, y.data(), s1.data());
    ConvFilterGrad(cc.g, F, x.data(), y.data(), dy.data(), batch, true, dw.data(), db.data(), nullptr, s2.data());
    y.insert(y.end(), dw.begin(), dw.end());
    y.insert(y.end(), db.begin(), db.end());
    return y;
  };
  const std::vector<float> here = run();
  SetNumThreads(std::get<1>(GetParam()) == 1 ? 2 : 1);
  EXPECT_EQ(here, run());
}

// Every pass on the tiled paths (3-wide stride 1 and 2, a strided input gradient with
// parity classes, a batch that ends in a short block of examples): 1, 2 and 3 threads
// give the same bits.
TEST_P(ConvKernels, EveryPassSameBitsForOneTwoThreeThreads) {
  const ConvCase cases[] = {{Make(9, 21, 16, 3, 3, 1, 1, true), 16},
                            {Make(11, 13, 5, 3, 3, 2, 2, true), 20},
                            {Make(10, 11, 2, 5, 3, 2, 3, true), 70}};
  const int batch = 19;
  for (const ConvCase& cc : cases) {
    const Window& g = cc.g;
    const int F = cc.filters;
    const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * F;
    auto x = Random(batch * g.in_size(), 31);
    auto w = Random(static_cast<size_t>(g.kh) * g.kw * g.c * F, 32, -0.3f, 0.3f);
    auto b = Random(static_cast<size_t>(F), 33);
    auto dy = Random(outputs, 34);
    auto run = [&](int threads) {
      SetNumThreads(threads);
      std::vector<float> y(outputs), dw(w.size()), db(static_cast<size_t>(F)), dpre(outputs), dx(x.size());
      std::vector<float> s1(ConvForwardScratch(g, F, batch)), s2(ConvFilterGradScratch(g, F, batch));
      std::vector<float> s3(ConvInputGradScratch(g, F, batch));
      ConvForward(g, F, x.data(), batch, w.data(), b.data(), true, y.data(), s1.data());
      ConvFilterGrad(g, F, x.data(), y.data(), dy.data(), batch, true, dw.data(), db.data(), dpre.data(), s2.data());
      ConvInputGrad(g, F, dpre.data(), w.data(), batch, dx.data(), s3.data());
      for (const auto* v : {&dw, &db, &dpre, &dx}) y.insert(y.end(), v->begin(), v->end());
      return y;
    };
    const std::vector<float> one = run(1);
    EXPECT_EQ(one, run(2)) << "F=" << F << " C=" << g.c;
    EXPECT_EQ(one, run(3)) << "F=" << F << " C=" << g.c;
  }
}

INSTANTIATE_TEST_SUITE_P(Impl, ConvKernels, RINGTRAIN_KERNEL_PARAMS);

}  // namespace
}  // namespace ringtrain::kernels
