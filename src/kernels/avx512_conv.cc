// AVX-512 convolution passes, direct (no im2col): vectors run over the filters, so a
// tile of output pixels x filter vectors accumulates in registers while the window
// slides over the (zero-padded) input.
#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "kernels/avx512_conv_grad_tiles.h"
#include "kernels/avx512_conv_tiles.h"
#include "kernels/avx512_util.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"
#include "kernels/winograd.h"

namespace ringtrain::kernels::avx512 {
namespace {

using namespace tiles;  // this file drives the tiles of avx512_conv_tiles.h and avx512_conv_grad_tiles.h

constexpr int kTapsPerPass = 12;  // filter-gradient taps accumulated at once
constexpr int kExamplesPerPartial = 8;  // filter-gradient examples summed in registers, at most
constexpr size_t kPartialBytes = 384 << 10;  // and their inputs and gradients, at most

}  // namespace

void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch) {
  if (UseWinograd(g, filters, ConvPass::kForward)) {
    WinogradForward(g, filters, x, batch, w, bias, relu, y, scratch);
    return;
  }
  int ph, pw;
  const float* xp = PadInput(g, x, batch, scratch, &ph, &pw);
  const Geometry geo{g.kh, g.kw, g.c, filters, pw * g.c, g.stride_w * g.c, filters};
  const bool kw3 = g.kw == 3 && g.stride_w == 1;
  ParallelFor(static_cast<int64_t>(batch) * g.out_h, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int n = static_cast<int>(row / g.out_h), oh = static_cast<int>(row % g.out_h);
      const float* xrow = xp + (static_cast<size_t>(n) * ph + static_cast<size_t>(oh) * g.stride_h) * pw * g.c;
      float* yrow = y + (static_cast<size_t>(n) * g.out_h + oh) * g.out_w * filters;
      for (int f0 = 0; f0 < filters; f0 += kFilterGroup) {
        const FilterGroup fg = GroupAt(filters, f0);
        const int kind = fg.nv == 2 ? 2 : kw3 ? 3 : 1;
        ForEachPixelTile(g.out_w, fg.nv == 1 ? kMaxPixels1 : kMaxPixels2, [&](int ow0, int p) {
          PickForward(kind, p, geo.pixel_stride)(geo, xrow + static_cast<size_t>(ow0) * geo.pixel_stride, w + f0,
                                bias != nullptr ? bias + f0 : nullptr, relu,
                                yrow + static_cast<size_t>(ow0) * filters + f0, fg.last);
        });
      }
    }
  });
}

void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch) {
  ConvFilterGradImpl(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch, /*padded_ready=*/false);
}

void ConvFilterGradImpl(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch, bool padded_ready) {
  if (UseWinograd(g, filters, ConvPass::kFilterGrad)) {
    WinogradFilterGrad(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch);
    return;
  }
  // A Winograd forward left no padded copy of x behind.
  if (UseWinograd(g, filters, ConvPass::kForward)) padded_ready = false;
  const int taps = g.kh * g.kw * g.c;
  const size_t per_example = static_cast<size_t>(g.out_h) * g.out_w * filters;
  // scratch: [padded input][masked gradient if the caller wants none][a partial per block]
  int ph, pw;
  const float* xp =
      padded_ready ? PaddedView(g, x, scratch, &ph, &pw) : PadInput(g, x, batch, scratch, &ph, &pw);
  float* rest = scratch + PaddedInputSize(g, batch);
  float* d = dpre;
  if (d == nullptr) {
    d = rest;
    rest += per_example * batch;
  }
  const size_t partial_size = static_cast<size_t>(taps + 1) * filters;  // dw then db
  float* partials = rest;
  // Examples go in blocks (the last may be short), each summed in registers into one
  // partial: up to kExamplesPerPartial, fewer where their inputs and gradients would not
  // stay in the L2 cache over the passes (a function of the shape alone, not of the threads).
  const size_t example_bytes = (static_cast<size_t>(ph) * pw * g.c + per_example) * sizeof(float);
  const int block = static_cast<int>(std::clamp<size_t>(kPartialBytes / example_bytes, 1, kExamplesPerPartial));
  const int blocks = (batch + block - 1) / block;
  const size_t x_step = static_cast<size_t>(ph) * pw * g.c;
  // Tap t = (i, j, c) sits at this offset inside a window.
  auto tap_offset = [&](int t) { return ((t / (g.kw * g.c)) * pw + (t / g.c) % g.kw) * g.c + t % g.c; };
  const int tg = std::min(kTapsPerPass, taps);
  // 3-wide windows of stride 1 or 2 take FilterGradKw3, a kernel row and `cc` channels a
  // pass, unless every tap fits one pass of the tap tile (one channel: 0.21 vs 0.36 ms).
  const bool kw3 = g.kw == 3 && (g.stride_w == 1 || g.stride_w == 2) && taps > kTapsPerPass;
  const int cc_most = filters > 16 ? 4 : 8;
  const bool one_pass = kw3 ? g.kh == 1 && g.c <= cc_most : taps <= tg;
  // The masked gradient is kept only when a later pass or the caller reads it; without a
  // relu it is dy itself, which later passes read instead.
  const bool keep_d = dpre != nullptr || (!one_pass && relu);
  const float* dread = relu ? d : dy;
  // One partial sum per block of examples, reduced below in block order: the bits do
  // not depend on how the blocks are split over threads.
  ParallelFor(blocks, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int n = static_cast<int>(b) * block;
      const Positions pos{g.out_h, g.out_w, g.stride_h * pw * g.c, g.stride_w * g.c,
                          std::min(block, batch - n), x_step, per_example};
      const size_t base = static_cast<size_t>(n) * per_example;
      float* part = partials + static_cast<size_t>(b) * partial_size;
      const float* xn = xp + static_cast<size_t>(n) * x_step;
      for (int f0 = 0; f0 < filters; f0 += kFilterGroup) {
        const FilterGroup fg = GroupAt(filters, f0);
        const GradIo io{dy + base + f0, y == nullptr ? nullptr : y + base + f0, keep_d ? d + base + f0 : nullptr,
                        dread + base + f0, part + static_cast<size_t>(taps) * filters + f0};
        if (kw3) {
          for (int i = 0; i < g.kh; ++i) {
            for (int c0 = 0; c0 < g.c; c0 += cc_most) {
              const int cc = std::min(cc_most, g.c - c0);
              (g.stride_w == 1 ? PickFilterGradKw3<1>(fg.nv, cc) : PickFilterGradKw3<2>(fg.nv, cc))(xn + static_cast<size_t>(i) * pw * g.c + c0, pos, io, i == 0 && c0 == 0,
                                          relu, filters, g.c,
                                          part + (static_cast<size_t>(i) * 3 * g.c + c0) * filters + f0, fg.last);
            }
          }
          continue;
        }
        for (int t0 = 0; t0 < taps; t0 += tg) {
          const int here = std::min(tg, taps - t0);
          int off[kTapsPerPass], row[kTapsPerPass];
          for (int t = 0; t < tg; ++t) {
            const int src = t0 + std::min(t, here - 1);  // padding taps repeat the last; not stored
            off[t] = tap_offset(src);
            row[t] = src;
          }
          const FilterGradFn fn = fg.nv == 1 ? PickFilterGrad<1>(tg) : PickFilterGrad<2>(tg);
          fn(off, xn, pos, io, t0 == 0, relu, filters, part + f0, row, here, fg.last);
        }
      }
    }
  });
  const size_t total = static_cast<size_t>(taps) * filters;
  for (size_t k = 0; k < total; ++k) dw[k] = partials[k];
  if (db != nullptr) {
    for (int f = 0; f < filters; ++f) db[f] = partials[total + static_cast<size_t>(f)];
  }
  for (int b = 1; b < blocks; ++b) {
    const float* part = partials + static_cast<size_t>(b) * partial_size;
    for (size_t k = 0; k < total; ++k) dw[k] += part[k];
    if (db != nullptr) {
      for (int f = 0; f < filters; ++f) db[f] += part[total + static_cast<size_t>(f)];
    }
  }
}

void ConvInputGradStride1(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                          float* scratch) {
  // wt[i, j, f, c] = w[kh - 1 - i, kw - 1 - j, c, f]
  float* wt = scratch;
  for (int i = 0; i < g.kh; ++i) {
    for (int j = 0; j < g.kw; ++j) {
      const float* src = w + static_cast<size_t>((g.kh - 1 - i) * g.kw + (g.kw - 1 - j)) * g.c * filters;
      float* dst = wt + static_cast<size_t>(i * g.kw + j) * filters * g.c;
      for (int c = 0; c < g.c; ++c) {
        for (int f = 0; f < filters; ++f) dst[static_cast<size_t>(f) * g.c + c] = src[static_cast<size_t>(c) * filters + f];
      }
    }
  }
  avx512::ConvForward(TransposedStride1(g, filters), g.c, dpre, batch, wt, nullptr, false, dx,
              scratch + static_cast<size_t>(g.kh) * g.kw * g.c * filters);
}

}  // namespace ringtrain::kernels::avx512
