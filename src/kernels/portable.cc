// The portable implementation: OpenBLAS sgemm for the products (im2col for the
// convolution) and plain loops for the rest. Used on CPUs without AVX-512.
#include <cblas.h>

#include <algorithm>

#include "kernels/im2col.h"
#include "kernels/impl.h"

namespace ringtrain::kernels::portable {
namespace {

void BiasActivation(float* y, size_t rows, size_t units, const float* bias, bool relu) {
  if (bias == nullptr && !relu) return;
  for (size_t r = 0; r < rows; ++r) {
    float* row = y + r * units;
    if (bias != nullptr) {
      for (size_t u = 0; u < units; ++u) row[u] += bias[u];
    }
    if (relu) {
      for (size_t u = 0; u < units; ++u) row[u] = row[u] > 0.0f ? row[u] : 0.0f;
    }
  }
}

bool IsPointwise(const Window& g) {
  return g.kh == 1 && g.kw == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 && g.pad_left == 0;
}

}  // namespace

void DenseForward(const float* x, int batch, int in, const float* w, int units, const float* bias, bool relu,
                  float* y) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, units, in, 1.0f, x, in, w, units, 0.0f, y, units);
  BiasActivation(y, static_cast<size_t>(batch), static_cast<size_t>(units), bias, relu);
}

void DenseWeightGrad(const float* x, const float* d, int batch, int in, int units, float* dw) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, units, batch, 1.0f, x, in, d, units, 0.0f, dw, units);
}

void DenseInputGrad(const float* d, const float* w, int batch, int in, int units, float* dx, float* /*scratch*/) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, in, units, 1.0f, d, units, w, units, 0.0f, dx, in);
}

void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch) {
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * g.c;
  const float* cols = x;
  if (!IsPointwise(g)) {
    Im2Col(g, x, batch, scratch);
    cols = scratch;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, filters, K, 1.0f, cols, K, w, filters, 0.0f, y, filters);
  BiasActivation(y, static_cast<size_t>(M), static_cast<size_t>(filters), bias, relu);
}

void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch) {
  const int M = batch * g.out_h * g.out_w, K = g.kh * g.kw * g.c;
  const size_t outputs = static_cast<size_t>(M) * filters;
  float* d = dpre != nullptr ? dpre : scratch;
  float* cols_buf = scratch + outputs;
  for (size_t i = 0; i < outputs; ++i) d[i] = !relu || y[i] > 0.0f ? dy[i] : 0.0f;
  if (db != nullptr) {
    std::fill(db, db + filters, 0.0f);
    for (int r = 0; r < M; ++r) {
      const float* row = d + static_cast<size_t>(r) * filters;
      for (int f = 0; f < filters; ++f) db[f] += row[f];
    }
  }
  const float* cols = x;
  if (!IsPointwise(g)) {
    Im2Col(g, x, batch, cols_buf);
    cols = cols_buf;
  }
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, filters, M, 1.0f, cols, K, d, filters, 0.0f, dw, filters);
}

void MaxPoolForward(const Window& g, const float* x, int batch, float* y) {
  const int C = g.c;
  for (int n = 0; n < batch; ++n) {
    const float* img = x + static_cast<size_t>(n) * g.in_size();
    float* out = y + static_cast<size_t>(n) * g.out_h * g.out_w * C;
    for (int oh = 0; oh < g.out_h; ++oh) {
      const int h0 = std::max(oh * g.stride_h - g.pad_top, 0), h1 = std::min(oh * g.stride_h - g.pad_top + g.kh, g.h);
      for (int ow = 0; ow < g.out_w; ++ow, out += C) {
        const int w0 = std::max(ow * g.stride_w - g.pad_left, 0);
        const int w1 = std::min(ow * g.stride_w - g.pad_left + g.kw, g.w);
        std::copy(img + (static_cast<size_t>(h0) * g.w + w0) * C, img + (static_cast<size_t>(h0) * g.w + w0 + 1) * C, out);
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = w0; iw < w1; ++iw) {
            const float* v = img + (static_cast<size_t>(ih) * g.w + iw) * C;
            for (int c = 0; c < C; ++c) out[c] = v[c] > out[c] ? v[c] : out[c];
          }
        }
      }
    }
  }
}

void MaxPoolBackward(const Window& g, const float* x, const float* y, const float* dy, int batch, float* dx) {
  const int C = g.c;
  std::fill(dx, dx + static_cast<size_t>(batch) * g.in_size(), 0.0f);
  for (int n = 0; n < batch; ++n) {
    const float* img = x + static_cast<size_t>(n) * g.in_size();
    float* din = dx + static_cast<size_t>(n) * g.in_size();
    const size_t out0 = static_cast<size_t>(n) * g.out_h * g.out_w * C;
    for (int oh = 0; oh < g.out_h; ++oh) {
      const int h0 = std::max(oh * g.stride_h - g.pad_top, 0), h1 = std::min(oh * g.stride_h - g.pad_top + g.kh, g.h);
      for (int ow = 0; ow < g.out_w; ++ow) {
        const int w0 = std::max(ow * g.stride_w - g.pad_left, 0);
        const int w1 = std::min(ow * g.stride_w - g.pad_left + g.kw, g.w);
        const size_t o = out0 + (static_cast<size_t>(oh) * g.out_w + ow) * C;
        for (int c = 0; c < C; ++c) {
          bool found = false;  // the first cell equal to the maximum takes the gradient
          for (int ih = h0; ih < h1 && !found; ++ih) {
            for (int iw = w0; iw < w1 && !found; ++iw) {
              const size_t cell = (static_cast<size_t>(ih) * g.w + iw) * C + c;
              if (img[cell] == y[o + c]) {
                din[cell] += dy[o + c];
                found = true;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace ringtrain::kernels::portable
