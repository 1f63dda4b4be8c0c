// Per-channel kernels of BatchNormalization over channels-last data: x is [rows, c],
// the channel innermost. Sums run in double, row by row in order, with no fused
// multiply-add anywhere: the AVX-512 implementation vectorises over channels only, so
// both implementations give the same bits on every CPU and thread count.
// `y` below, when not null, is the layer's output after a fused relu: the gradient is
// then g = dy where y > 0, else 0 (Keras' relu gradient); with y null, g = dy. Where the
// passes also read x, the relu's output may instead be given by the affine that made it
// (ReluOutput: y > 0 exactly where x * a + b > 0, ChannelAffine's arithmetic), so that y
// need not be read.
// One thread (the caller's); nothing allocated.
#pragma once

#include <cstddef>

namespace ringtrain::kernels {

// A fused relu's output for the gradient mask: y itself, or (a, b) per channel to recompute
// it from x; all null: no relu.
struct ReluOutput {
  const float* y = nullptr;
  const float* a = nullptr;
  const float* b = nullptr;
};

// sum[k] = sum over rows of x[r, k]; sum_sq[k] = sum of x^2 (both overwritten, double).
void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq);

// out[r, k] = x[r, k] * a[k] + b[k] (float, multiply then add), plus add[r, k] after that
// when add is not null (an Add of the layer's output and another input, fused: the bits of
// the two passes); with relu, values that are not > 0 become 0 (NaN too), as Keras' relu.
void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, const float* add, bool relu,
                   float* out);

// sum_g[k] = sum of g[r, k], sum_gx[k] = sum of g[r, k] * x[r, k] (double, overwritten).
void ChannelGradSums(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, double* sum_g,
                     double* sum_gx);

// din[r, k] = a[k] * (g[r, k] - mean_g[k]) + b[k] * (x[r, k] - mean[k]) (float).
void ChannelInputGrad(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c, const float* a,
                      const float* mean_g, const float* b, const float* mean, float* din);

// din[r, k] = g[r, k] * a[k].
void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din);

// The two implementations behind the functions above (same contracts).
#define RINGTRAIN_NORM_DECLS                                                                                  \
  void ChannelSums(const float* x, size_t rows, int c, double* sum, double* sum_sq);                          \
  void ChannelAffine(const float* x, size_t rows, int c, const float* a, const float* b, const float* add,    \
                     bool relu, float* out);                                                                  \
  void ChannelGradSums(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c,             \
                       double* sum_g, double* sum_gx);                                                        \
  void ChannelInputGrad(const float* dy, const ReluOutput& y, const float* x, size_t rows, int c,             \
                        const float* a,                                                                       \
                        const float* mean_g, const float* b, const float* mean, float* din);                  \
  void ChannelScaleGrad(const float* dy, const float* y, size_t rows, int c, const float* a, float* din);
namespace portable {
RINGTRAIN_NORM_DECLS
}  // namespace portable
namespace avx512 {
RINGTRAIN_NORM_DECLS
}  // namespace avx512
#undef RINGTRAIN_NORM_DECLS

}  // namespace ringtrain::kernels
