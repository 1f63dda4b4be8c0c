// The CUDA kernels of BatchNormalization and LayerNormalization (backends/cuda/norm_kernels.cu),
// behind host functions that enqueue them on `stream` and return the launch's error
// (cudaSuccess when enqueued); none synchronises or allocates. The arithmetic is
// backends/cuda/norm_math.h's, which says in which order every sum runs (fixed by the
// shape; no atomics: the same inputs give the same bits every run).
//
// Layouts are the CPU's: BatchNorm's x is [rows, c], the channel innermost (rows = batch
// x positions); LayerNorm's x is [rows, n], a row one example's normalized trailing axes.
// Pointers are device memory; a null gamma / beta means scale / center false, a null
// gradient output means none is written, a null `relu_y` means no fused relu mask.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace ringtrain::gpu {

// ---------------------------------------------------------------- BatchNormalization
// The per-channel scratch the two-pass sums need: at least this many doubles.
size_t BnPartialDoubles(int64_t rows, int c);

// sums[k] = sum over rows of x[r, k], sums[c + k] = sum of x^2 (double; kernels::ChannelSums).
cudaError_t BnChannelSums(const float* x, int64_t rows, int c, double* partial, double* sums, cudaStream_t stream);

// Per channel, from the sums over `count` rows (batch statistics): mean, invstd, the
// affine's a and b (each c floats), and, when stats is not null, the reduced statistics
// stats[k] = mean, stats[c + k] = biased variance.
cudaError_t BnBatchCoefficients(const double* sums, double count, int c, float eps, const float* gamma,
                                const float* beta, float* mean, float* invstd, float* a, float* b, float* stats,
                                cudaStream_t stream);
// The same from the moving statistics (inference mode).
cudaError_t BnMovingCoefficients(const float* moving_mean, const float* moving_var, int c, float eps,
                                 const float* gamma, const float* beta, float* mean, float* invstd, float* a,
                                 float* b, cudaStream_t stream);

// y[r, k] = x[r, k] * a[k] + b[k], relu'd when asked.
cudaError_t BnAffine(const float* x, int64_t rows, int c, const float* a, const float* b, bool relu, float* y,
                     cudaStream_t stream);

// With g = dy masked where relu_y <= 0 (relu_y null: g = dy): sums[k] = sum(g),
// sums[c + k] = sum(g * xhat) = invstd * (sum(g * x) - mean * sum(g)) (double), and
// dbeta[k] = sum(g), dgamma[k] = sum(g * xhat) where not null.
cudaError_t BnGradSums(const float* dy, const float* relu_y, const float* x, int64_t rows, int c, const float* mean,
                       const float* invstd, double* partial, double* sums, float* dgamma, float* dbeta,
                       cudaStream_t stream);

// Pass 2's coefficients from the gradient sums over `count` rows: mean_g[k] = sum(g) /
// count, coef_b[k] = -a * invstd * sum(g * xhat) / count.
cudaError_t BnInputGradCoefficients(const double* sums, double count, int c, const float* a, const float* invstd,
                                    float* mean_g, float* coef_b, cudaStream_t stream);

// din[r, k] = a[k] * (g - mean_g[k]) + coef_b[k] * (x[r, k] - mean[k]).
cudaError_t BnInputGrad(const float* dy, const float* relu_y, const float* x, int64_t rows, int c, const float* a,
                        const float* mean_g, const float* coef_b, const float* mean, float* din,
                        cudaStream_t stream);

// din[r, k] = g * a[k] (inference mode).
cudaError_t BnScaleGrad(const float* dy, const float* relu_y, int64_t rows, int c, const float* a, float* din,
                        cudaStream_t stream);

// moving_mean[k] = moving_mean[k] * keep + (sums[k] / n) * take, moving_var likewise
// from sums[c + k].
cudaError_t BnMovingUpdate(float* moving_mean, float* moving_var, const float* sums, int c, float n, float keep,
                           float take, cudaStream_t stream);

// ---------------------------------------------------------------- LayerNormalization
// y = (x - mean) * invstd * gamma + beta per row; mean[r] and invstd[r] kept for Backward.
cudaError_t LnForward(const float* x, int64_t rows, int64_t n, float eps, const float* gamma, const float* beta,
                      float* y, float* mean, float* invstd, cudaStream_t stream);

size_t LnPartialDoubles(int64_t rows, int64_t n);
// dgamma[k] = sum over rows of dy * xhat, dbeta[k] = sum of dy (either may be null).
cudaError_t LnParamGrads(const float* dy, const float* x, const float* mean, const float* invstd, int64_t rows,
                         int64_t n, double* partial, float* dgamma, float* dbeta, cudaStream_t stream);

// din = invstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = dy * gamma.
cudaError_t LnInputGrad(const float* dy, const float* x, const float* mean, const float* invstd, int64_t rows,
                        int64_t n, const float* gamma, float* din, cudaStream_t stream);

}  // namespace ringtrain::gpu
