// The portable per-channel kernels (plain loops) and the dispatch to AVX-512.
#include "kernels/norm.h"

#include "kernels/impl.h"

namespace ringtrain::kernels {
namespace portable {
namespace {

inline float Grad(const float* dy, const float* y, size_t i) {
  const float d = dy[i];
  return y == nullptr || y[i] > 0.0f ? d : 0.0f;
}

// The same where the relu's output is given as ReluOutput (element i of x, channel k).
inline float Grad(const float* dy, const ReluOutput& y, const float* x, size_t i, size_t k) {
  if (y.a == nullptr) return Grad(dy, y.y, i);
  const float v = x[i] * y.a[k] + y.b[k];
  return v > 0.0f ? dy[i] : 0.0f;
}

}  // namespace

void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq) {
  const size_t n = static_cast<size_t>(c);
  for (size_t k = 0; k < n; ++k) sum[k] = sum_sq[k] = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    for (size_t k = 0; k < n; ++k) {
      const double v = xr[k];
      sum[k] += v;
      sum_sq[k] += v * v;
    }
  }
}

void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, const float* add, bool relu,
                   float* out) {
  const size_t n = static_cast<size_t>(c);
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* ar = add == nullptr ? nullptr : add + r * n;
    float* o = out + r * n;
    for (size_t k = 0; k < n; ++k) {
      float v = xr[k] * a[k] + b[k];
      if (ar != nullptr) v = v + ar[k];
      o[k] = !relu || v > 0.0f ? v : 0.0f;
    }
  }
}

void ChannelGradSums(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, double* sum_g,
                     double* sum_gx) {
  const size_t n = static_cast<size_t>(c);
  for (size_t k = 0; k < n; ++k) sum_g[k] = sum_gx[k] = 0.0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const double g = Grad(dy, y, x, r * n + k, k);
      sum_g[k] += g;
      sum_gx[k] += g * static_cast<double>(x[r * n + k]);
    }
  }
}

void ChannelInputGrad(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, const float* a,
                      const float* mean_g, const float* b, const float* mean, float* din) {
  const size_t n = static_cast<size_t>(c);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < n; ++k) {
      const size_t i = r * n + k;
      din[i] = a[k] * (Grad(dy, y, x, i, k) - mean_g[k]) + b[k] * (x[i] - mean[k]);
    }
  }
}

void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din) {
  const size_t n = static_cast<size_t>(c);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < n; ++k) din[r * n + k] = Grad(dy, y, r * n + k) * a[k];
  }
}

}  // namespace portable

#define RINGTRAIN_NORM_DISPATCH(call) return UseAvx512() ? avx512::call : portable::call

void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq) {
  RINGTRAIN_NORM_DISPATCH(ChannelSums(x, rows, c, sum, sum_sq));
}
void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, const float* add, bool relu,
                   float* out) {
  RINGTRAIN_NORM_DISPATCH(ChannelAffine(x, rows, c, a, b, add, relu, out));
}
void ChannelGradSums(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, double* sum_g,
                     double* sum_gx) {
  RINGTRAIN_NORM_DISPATCH(ChannelGradSums(dy, y, x, rows, c, sum_g, sum_gx));
}
void ChannelInputGrad(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, const float* a,
                      const float* mean_g, const float* b, const float* mean, float* din) {
  RINGTRAIN_NORM_DISPATCH(ChannelInputGrad(dy, y, x, rows, c, a, mean_g, b, mean, din));
}
void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din) {
  RINGTRAIN_NORM_DISPATCH(ChannelScaleGrad(dy, y, rows, c, a, din));
}

#undef RINGTRAIN_NORM_DISPATCH

}  // namespace ringtrain::kernels
