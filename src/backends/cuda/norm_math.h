// The per-element and per-thread arithmetic of the GPU's BatchNormalization and
// LayerNormalization kernels (backends/cuda/norm_kernels.cu), as inline functions that
// compile for both the host and the device. The kernels call them on the GPU;
// tests/gpu/norm_math_test.cc calls the same functions in the kernels' loops on the host
// and compares them with the CPU layers (nn/layers/batch_norm.cc, nn/layers/layer_norm.cc
// and the per-channel kernels of kernels/norm.h).
//
// Every function repeats the CPU's expressions in its order of operations, each product
// and sum rounded on its own (nvcc builds the kernels with --fmad=false; host callers
// must not contract either: -ffp-contract=off where the target has FMA). Sums run in
// double where the CPU's do.
//
// Reductions:
//   - per channel (BatchNorm's statistics and gradient sums; LayerNorm's gamma and beta
//     gradients, one column per normalized element): the rows are cut into `lanes`
//     contiguous chunks (SumLanes), each summed in row order from 0 by one thread, then
//     the chunk sums added in chunk order (SumOverLanes). Up to kOneLaneRows rows there
//     is one chunk: the CPU's order and bits exactly.
//   - per row (LayerNorm's mean, variance and input-gradient sums): RowThreads(n)
//     threads each sum the elements t, t + threads, ... in order (RowPart...), then a
//     fixed tree adds the thread sums (TreeSum: the order of the kernels' block
//     reduction). Not the CPU's order; both in double.
// Every split depends on the shape alone, so the bits are the same every run.
//
// Header-only, no CUDA dependency. Pure functions; any thread may call them.
#pragma once

#include <math.h>  // ::sqrtf: declared __host__ __device__ by nvcc

#include <cstddef>
#include <cstdint>

#ifndef RT_HD
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::nm {

// ---------------------------------------------------------------- per-channel sums
constexpr int64_t kOneLaneRows = 4096;  // up to this many rows: one chunk (the CPU's order)
constexpr int64_t kLaneRows = 128;      // above: chunks of this many rows
constexpr int kGroup = 8;               // rows a chunk's thread loads before adding them

RT_HD inline int64_t SumLanes(int64_t rows) {
  return rows <= kOneLaneRows ? 1 : (rows + kLaneRows - 1) / kLaneRows;
}

// Rows [*begin, *end) of chunk `lane` out of `lanes` (the last ones may be short or empty).
RT_HD inline void LaneRows(int64_t rows, int64_t lanes, int64_t lane, int64_t* begin, int64_t* end) {
  const int64_t per = (rows + lanes - 1) / lanes;
  const int64_t b = per * lane;
  const int64_t e = b + per;
  *begin = b < rows ? b : rows;
  *end = e < rows ? e : rows;
}

// The chunk sums of column `col` (partial[lane * cols + col]) added in lane order.
RT_HD inline double SumOverLanes(const double* partial, int64_t lanes, int64_t cols, int64_t col) {
  double s = partial[col];
  for (int64_t l = 1; l < lanes; ++l) s += partial[l * cols + col];
  return s;
}

// ---------------------------------------------------------------- BatchNormalization
// x is [rows, c], the channel innermost (kernels/norm.h's layout).

// kernels::ChannelSums over rows [begin, end) of channel k: sum of x and of x^2 in double.
// Rows are read kGroup at a time before any is added (in row order), so that a GPU
// thread has that many loads in flight; the same below.
RT_HD inline void ChannelSumsChunk(const float* x, int64_t begin, int64_t end, int c, int k, double* sum,
                                   double* sum_sq) {
  double s = 0.0, q = 0.0;
  int64_t r = begin;
  for (; r + kGroup <= end; r += kGroup) {
    float v[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) v[j] = x[(r + j) * c + k];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) {
      const double d = v[j];
      s += d;
      q += d * d;
    }
  }
  for (; r < end; ++r) {
    const double v = x[r * c + k];
    s += v;
    q += v * v;
  }
  *sum = s;
  *sum_sq = q;
}

// The gradient through a fused relu: dy where the layer's output y is > 0 (y null: no relu).
RT_HD inline float MaskedGrad(const float* dy, const float* y, int64_t i) {
  const float d = dy[i];
  return y == nullptr || y[i] > 0.0f ? d : 0.0f;
}

// kernels::ChannelGradSums over rows [begin, end) of channel k: sum of g and of g * x (double).
RT_HD inline void ChannelGradSumsChunk(const float* dy, const float* y, const float* x, int64_t begin, int64_t end,
                                       int c, int k, double* sum_g, double* sum_gx) {
  double sg = 0.0, sgx = 0.0;
  int64_t r = begin;
  for (; r + kGroup <= end; r += kGroup) {
    float g[kGroup], v[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) {
      const int64_t i = (r + j) * c + k;
      g[j] = MaskedGrad(dy, y, i);
      v[j] = x[i];
    }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) {
      const double gd = g[j];
      sg += gd;
      sgx += gd * static_cast<double>(v[j]);
    }
  }
  for (; r < end; ++r) {
    const int64_t i = r * c + k;
    const double g = MaskedGrad(dy, y, i);
    sg += g;
    sgx += g * static_cast<double>(x[i]);
  }
  *sum_g = sg;
  *sum_gx = sgx;
}

// One channel's affine: out = x * a + b, with mean and 1 / sqrt(var + eps) behind it;
// var is the batch's biased variance (the reduced statistic; 0 in inference).
struct BnCoef {
  float mean = 0.0f, var = 0.0f, invstd = 0.0f, a = 0.0f, b = 0.0f;
};

// BatchNorm::TrainForward's per-channel statement, from the sums over `count` rows.
// gamma / beta null: scale / center false.
RT_HD inline BnCoef BatchCoef(double sum, double sum_sq, double count, float eps, const float* gamma,
                              const float* beta, int k) {
  BnCoef r;
  const double mean = sum / count;
  const double v = sum_sq / count - mean * mean;
  r.var = static_cast<float>(0.0 < v ? v : 0.0);  // std::max(0.0, v): NaN gives 0 too
  r.mean = static_cast<float>(mean);
  r.invstd = 1.0f / ::sqrtf(r.var + eps);
  r.a = gamma != nullptr ? gamma[k] * r.invstd : r.invstd;
  r.b = (beta != nullptr ? beta[k] : 0.0f) - r.mean * r.a;
  return r;
}

// BatchNorm::Forward's inference statement (Keras' formula), from the moving statistics.
RT_HD inline BnCoef MovingCoef(float moving_mean, float moving_var, float eps, const float* gamma, const float* beta,
                               int k) {
  BnCoef r;
  r.mean = moving_mean;
  r.invstd = 1.0f / ::sqrtf(moving_var + eps);
  r.a = gamma != nullptr ? gamma[k] * r.invstd : r.invstd;
  r.b = (beta != nullptr ? beta[k] : 0.0f) - r.mean * r.a;
  return r;
}

// kernels::ChannelAffine (no add): x * a + b, relu'd when asked (NaN and -0 become +0).
RT_HD inline float Affine(float x, float a, float b, bool relu) {
  const float v = x * a + b;
  return !relu || v > 0.0f ? v : 0.0f;
}

// BatchNorm::Backward's sum(g * xhat) = invstd * (sum(g * x) - mean * sum(g)) (double).
RT_HD inline double GradXhatSum(double sum_g, double sum_gx, float mean, float invstd) {
  return static_cast<double>(invstd) * (sum_gx - static_cast<double>(mean) * sum_g);
}

// Pass 2's coefficients: mean_g = mean(g), coef_b = -a * invstd * mean(g * xhat).
RT_HD inline void InputGradCoef(double sum_g, double sum_gxhat, double count, float a, float invstd, float* mean_g,
                                float* coef_b) {
  *coef_b = static_cast<float>(-static_cast<double>(a) * invstd * (sum_gxhat / count));
  *mean_g = static_cast<float>(sum_g / count);
}

// kernels::ChannelInputGrad: a * (g - mean_g) + coef_b * (x - mean) (float).
RT_HD inline float InputGrad(float g, float x, float a, float mean_g, float coef_b, float mean) {
  return a * (g - mean_g) + coef_b * (x - mean);
}

// kernels::ChannelScaleGrad: g * a.
RT_HD inline float ScaleGrad(float g, float a) { return g * a; }

// BatchNorm::ApplyReducedStats: moving * keep + (sum / n) * take, keep = momentum,
// take = 1 - momentum (float), n = the replicas.
RT_HD inline float MovingUpdate(float moving, float sum, float n, float keep, float take) {
  return moving * keep + (sum / n) * take;
}

// ---------------------------------------------------------------- synchronized BatchNorm
// What BatchNorm puts through StepContext::all_reduce_sum (host code). Forward: the row
// count as two exact parts (rows / 4096, rows % 4096), then sum(x) and sum(x^2) per
// channel rounded to float; Backward: sum(g) and sum(g * xhat) rounded to float.
constexpr float kCountBase = 4096.0f;

inline size_t ForwardReduceFloats(int c) { return 2 + 2 * static_cast<size_t>(c); }
inline size_t BackwardReduceFloats(int c) { return 2 * static_cast<size_t>(c); }

// sums: [sum(x) per channel, sum(x^2) per channel]; red: ForwardReduceFloats(c) floats.
inline void PackForwardReduce(size_t rows, const double* sums, int c, float* red) {
  const size_t n = static_cast<size_t>(c);
  red[0] = static_cast<float>(rows / static_cast<size_t>(kCountBase));
  red[1] = static_cast<float>(rows % static_cast<size_t>(kCountBase));
  for (size_t k = 0; k < n; ++k) {
    red[2 + k] = static_cast<float>(sums[k]);
    red[2 + n + k] = static_cast<float>(sums[n + k]);
  }
}

// The replicas' sums back into `sums`; returns the replicas' row count.
inline double UnpackForwardReduce(const float* red, int c, double* sums) {
  const size_t n = static_cast<size_t>(c);
  for (size_t k = 0; k < n; ++k) {
    sums[k] = red[2 + k];
    sums[n + k] = red[2 + n + k];
  }
  return static_cast<double>(red[0]) * kCountBase + red[1];
}

// sums: [sum(g) per channel, sum(g * xhat) per channel] <-> BackwardReduceFloats(c) floats.
inline void PackBackwardReduce(const double* sums, int c, float* red) {
  for (size_t k = 0; k < 2 * static_cast<size_t>(c); ++k) red[k] = static_cast<float>(sums[k]);
}
inline void UnpackBackwardReduce(const float* red, int c, double* sums) {
  for (size_t k = 0; k < 2 * static_cast<size_t>(c); ++k) sums[k] = red[k];
}

// ---------------------------------------------------------------- LayerNormalization
// x is [rows, n], each row one example's normalized trailing axes; gamma and beta [n].

constexpr int kMaxRowThreads = 256;

// Threads per row: the power of two in [32, kMaxRowThreads] nearest above n.
RT_HD inline int RowThreads(int64_t n) {
  int t = 32;
  while (t < kMaxRowThreads && t < n) t *= 2;
  return t;
}

// Thread t's share of a row: elements t, t + threads, ... summed in order from 0.
RT_HD inline double RowPartSum(const float* x, int64_t n, int t, int threads) {
  double s = 0.0;
  for (int64_t k = t; k < n; k += threads) s += x[k];
  return s;
}

// The same of (x - m)^2 with the row's mean m in double (LayerNorm::Forward's exact
// second pass).
RT_HD inline double RowPartSqDev(const float* x, int64_t n, double m, int t, int threads) {
  double q = 0.0;
  for (int64_t k = t; k < n; k += threads) q += (x[k] - m) * (x[k] - m);
  return q;
}

// The kernels' block reduction on the host: part[t] += part[t + s] for s = threads / 2,
// ..., 1 (each step over t < s), the sum in part[0]. `threads` is a power of two.
inline double TreeSum(double* part, int threads) {
  for (int s = threads / 2; s > 0; s /= 2) {
    for (int t = 0; t < s; ++t) part[t] = part[t] + part[t + s];
  }
  return part[0];
}

// A row's 1 / sqrt(var + eps) from the sum q of squared deviations over n elements.
RT_HD inline float RowInvStd(double q, int64_t n, float eps) {
  return 1.0f / ::sqrtf(static_cast<float>(q / static_cast<double>(n)) + eps);
}

RT_HD inline float RowMean(double sum, int64_t n) { return static_cast<float>(sum / static_cast<double>(n)); }

// xhat = (x - mean) * invstd (float, the row's float mean).
RT_HD inline float Xhat(float x, float mean, float invstd) { return (x - mean) * invstd; }

// Element k of a row's output: xhat, times gamma[k], plus beta[k] (null: scale / center false).
RT_HD inline float LnOutput(float x, float mean, float invstd, const float* gamma, const float* beta, int64_t k) {
  float o = Xhat(x, mean, invstd);
  if (gamma != nullptr) o *= gamma[k];
  if (beta != nullptr) o += beta[k];
  return o;
}

// g = dy * gamma[k] (gamma null: dy).
RT_HD inline float LnScaledGrad(float d, const float* gamma, int64_t k) { return gamma != nullptr ? d * gamma[k] : d; }

// Thread t's share of a row's sum(g) and sum(g * xhat) (double), elements t, t + threads, ...
RT_HD inline void RowPartGradSums(const float* dy, const float* x, const float* gamma, int64_t n, float mean,
                                  float invstd, int t, int threads, double* sum_g, double* sum_gx) {
  double sg = 0.0, sgx = 0.0;
  for (int64_t k = t; k < n; k += threads) {
    const float g = LnScaledGrad(dy[k], gamma, k);
    sg += g;
    sgx += static_cast<double>(g) * Xhat(x[k], mean, invstd);
  }
  *sum_g = sg;
  *sum_gx = sgx;
}

// din = invstd * (g - mean(g) - xhat * mean(g * xhat)), the means rounded to float.
RT_HD inline float LnInputGrad(float g, float xhat, float invstd, float mean_g, float mean_gx) {
  return invstd * (g - mean_g - xhat * mean_gx);
}

// Column k of gamma's and beta's gradients over rows [begin, end): sum of dy * xhat and
// of dy (double, row order).
RT_HD inline void LnParamGradChunk(const float* dy, const float* x, const float* mean, const float* invstd,
                                   int64_t begin, int64_t end, int64_t n, int64_t k, double* sum_gxhat,
                                   double* sum_g) {
  double sg = 0.0, sb = 0.0;
  int64_t r = begin;
  for (; r + kGroup <= end; r += kGroup) {
    float d[kGroup], xh[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) {
      const int64_t i = (r + j) * n + k;
      d[j] = dy[i];
      xh[j] = Xhat(x[i], mean[r + j], invstd[r + j]);
    }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int j = 0; j < kGroup; ++j) {
      sg += static_cast<double>(d[j]) * xh[j];
      sb += d[j];
    }
  }
  for (; r < end; ++r) {
    const int64_t i = r * n + k;
    sg += static_cast<double>(dy[i]) * Xhat(x[i], mean[r], invstd[r]);
    sb += dy[i];
  }
  *sum_gxhat = sg;
  *sum_g = sb;
}

}  // namespace ringtrain::gpu::nm
