// Convolution pieces both implementations share: the zero-padded input copy, the
// scratch sizes, im2col/col2im, and the input gradient (one sgemm + col2im).
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "kernels/impl.h"
#include "kernels/im2col.h"
#include "kernels/winograd.h"

namespace ringtrain::kernels {
namespace {

// The padded extent that holds every window: (out - 1) * stride + k.
int PaddedExtent(int out, int stride, int k) { return (out - 1) * stride + k; }

bool NeedsPadding(const Window& g) {
  return g.pad_top != 0 || g.pad_left != 0 || PaddedExtent(g.out_h, g.stride_h, g.kh) > g.h ||
         PaddedExtent(g.out_w, g.stride_w, g.kw) > g.w;
}

}  // namespace

size_t PaddedInputSize(const Window& g, int batch) {
  if (!NeedsPadding(g)) return 0;
  return static_cast<size_t>(batch) * PaddedExtent(g.out_h, g.stride_h, g.kh) *
         PaddedExtent(g.out_w, g.stride_w, g.kw) * g.c;
}

const float* PaddedView(const Window& g, const float* x, const float* padded, int* padded_h, int* padded_w) {
  if (!NeedsPadding(g)) {
    *padded_h = g.h;
    *padded_w = g.w;
    return x;
  }
  *padded_h = PaddedExtent(g.out_h, g.stride_h, g.kh);
  *padded_w = PaddedExtent(g.out_w, g.stride_w, g.kw);
  return padded;
}

const float* PadInput(const Window& g, const float* x, int batch, float* padded, int* padded_h, int* padded_w) {
  if (!NeedsPadding(g)) {
    *padded_h = g.h;
    *padded_w = g.w;
    return x;
  }
  const int ph = PaddedExtent(g.out_h, g.stride_h, g.kh), pw = PaddedExtent(g.out_w, g.stride_w, g.kw);
  *padded_h = ph;
  *padded_w = pw;
  // Row by row: the border cells are zeroed and the inside copied, so every float is
  // written once (zeroing the whole buffer first wrote the inside twice).
  const int copy_w = std::min(g.w, pw - g.pad_left);
  const size_t c = static_cast<size_t>(g.c);
  const size_t row = static_cast<size_t>(pw) * c, left = static_cast<size_t>(g.pad_left) * c;
  const size_t inside = static_cast<size_t>(copy_w) * c, right = row - left - inside;
  for (int n = 0; n < batch; ++n) {
    for (int r = 0; r < ph; ++r) {
      float* dst = padded + (static_cast<size_t>(n) * ph + r) * row;
      const int ih = r - g.pad_top;
      if (ih < 0 || ih >= g.h) {
        std::fill(dst, dst + row, 0.0f);
        continue;
      }
      std::fill(dst, dst + left, 0.0f);
      std::memcpy(dst + left, x + (static_cast<size_t>(n) * g.h + ih) * g.w * c, inside * sizeof(float));
      std::fill(dst + left + inside, dst + left + inside + right, 0.0f);
    }
  }
  return padded;
}

// The scratch sizes are those of the implementation this process runs now: the im2col
// matrix of the portable path is kh * kw * c times the output (1.8 GB for one of VGG16's
// 224x224 layers at batch 16), which the direct AVX-512 kernels never touch.
size_t ConvForwardScratch(const Window& g, int filters, int batch) {
  if (UseAvx512()) {
    const size_t wino = UseWinograd(g, filters, ConvPass::kForward) ? WinogradForwardScratch(g, filters, batch) : 0;
    return std::max(PaddedInputSize(g, batch), wino);
  }
  const size_t cols = static_cast<size_t>(batch) * g.out_h * g.out_w * g.kh * g.kw * g.c;
  return std::max(cols, PaddedInputSize(g, batch));
}

size_t ConvFilterGradScratch(const Window& g, int filters, int batch) {
  const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * filters;
  const size_t taps = static_cast<size_t>(g.kh) * g.kw * g.c;
  const size_t avx = PaddedInputSize(g, batch) + outputs + static_cast<size_t>(batch) * (taps + 1) * filters;
  if (UseAvx512()) {
    // Winograd's filter gradient never falls back to the direct tiles.
    if (UseWinograd(g, filters, ConvPass::kFilterGrad)) return WinogradFilterGradScratch(g, filters, batch);
    return avx;
  }
  const size_t cols = static_cast<size_t>(batch) * g.out_h * g.out_w * taps;
  return std::max(avx, cols + outputs);
}

namespace {

// Where ConvInputGrad takes AVX-512's transposed convolution: stride 1, not a plain
// 1x1 product (that one is a single sgemm).
// A 1x1 stride-1 unpadded convolution: a dense product over the pixels.
bool IsDirect(const Window& g) {
  return g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0;
}

bool TransposedPath(const Window& g) {
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.pad_top == 0 && g.pad_left == 0;
  return g.stride_h == 1 && g.stride_w == 1 && !pointwise && g.pad_top < g.kh && g.pad_left < g.kw;
}

// Where AVX-512 takes the parity split: every other non-pointwise window (strided, or
// padded by a whole kernel), undilated.
bool StridedPath(const Window& g) {
  return !IsDirect(g) && !TransposedPath(g) && g.dilation_h == 1 && g.dilation_w == 1;
}

}  // namespace

Window TransposedStride1(const Window& g, int filters) {
  Window t;
  t.h = g.out_h, t.w = g.out_w, t.c = filters;
  t.kh = g.kh, t.kw = g.kw;
  t.pad_top = g.kh - 1 - g.pad_top, t.pad_left = g.kw - 1 - g.pad_left;
  t.out_h = g.h, t.out_w = g.w;
  return t;
}

StridedPadding StridedInputGradPadding(const Window& g) {
  // Input row ih reads dpre rows m - k + 1 .. m, m = (ih + pad_top - a) / stride_h for
  // its parity a and k <= ceil(kh / stride_h) taps: `top` rows above row 0 and below the
  // last m.
  StridedPadding p;
  p.top = (g.kh + g.stride_h - 1) / g.stride_h - 1;
  p.left = (g.kw + g.stride_w - 1) / g.stride_w - 1;
  p.h = p.top + std::max(g.out_h, (g.h - 1 + g.pad_top) / g.stride_h + 1);
  p.w = p.left + std::max(g.out_w, (g.w - 1 + g.pad_left) / g.stride_w + 1);
  return p;
}

size_t ConvInputGradScratch(const Window& g, int filters, int batch) {
  const size_t cols = static_cast<size_t>(batch) * g.out_h * g.out_w * g.kh * g.kw * g.c;
  if (IsDirect(g)) return std::max(cols, DenseInputGradScratch(batch * g.out_h * g.out_w, filters));
  if (UseAvx512() && StridedPath(g)) {
    const StridedPadding p = StridedInputGradPadding(g);
    return static_cast<size_t>(g.kh) * g.kw * g.c * filters + static_cast<size_t>(batch) * p.h * p.w * filters;
  }
  if (!TransposedPath(g)) return cols;
  const Window t = TransposedStride1(g, filters);
  const size_t forward = UseAvx512() && UseWinograd(t, g.c, ConvPass::kForward) ? WinogradForwardScratch(t, g.c, batch)
                                                                                : PaddedInputSize(t, batch);
  const size_t transposed = static_cast<size_t>(g.kh) * g.kw * g.c * filters + forward;
  return std::max(cols, transposed);
}

size_t DenseInputGradScratch(int batch, int units) {
  return static_cast<size_t>((batch + 15) / 16 * 16) * static_cast<size_t>(units);
}

void ConvInputGrad(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                   float* scratch) {
  if (UseAvx512() && TransposedPath(g)) {
    // sgemm + col2im runs at a tenth of the forward's speed for few channels (ResNet's
    // 16 to 64); the transposed convolution runs at the forward's.
    avx512::ConvInputGradStride1(g, filters, dpre, w, batch, dx, scratch);
    return;
  }
  if (UseAvx512() && StridedPath(g)) {
    // sgemm + col2im ran at 56 GF/s for ResNet's stride-2 layers; the parity split runs
    // through the forward's tiles.
    avx512::ConvInputGradStrided(g, filters, dpre, w, batch, dx, scratch);
    return;
  }
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * g.c;
  const bool direct = IsDirect(g);
  if (UseAvx512() && direct) {  // dx[M, c] = dpre[M, filters] w^T: Dense's input gradient
    avx512::DenseInputGrad(dpre, w, M, K, filters, dx, scratch);
    return;
  }
  float* dcols = direct ? dx : scratch;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, K, filters, 1.0f, dpre, filters, w, filters, 0.0f, dcols,
              K);
  if (!direct) Col2Im(g, dcols, batch, dx);
}

}  // namespace ringtrain::kernels
