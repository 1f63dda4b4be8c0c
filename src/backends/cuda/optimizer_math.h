// The arithmetic of the GPU's optimizer step (backends/cuda/optimizer_kernels.h): gradient
// clipping, weight decay, every optimizer's per-element rule, and the weight
// regularization's gradient and penalty, as inline functions that compile for both the
// host and the device. The CUDA kernels (optimizer_kernels.cu) are thin loops over them;
// tests/gpu/optimizer_math_test.cc runs the same functions in the same loops on the host
// and compares them bit for bit with nn::Optimizer::Apply and nn::Regularizer.
//
// Every function repeats the CPU's order of operations (src/kernels/optimizer_updates.cc,
// src/nn/optimizers/, src/nn/regularizers/regularizer.cc) with each product and sum
// rounded on its own: nvcc compiles the kernels with --fmad=false, and host callers
// must not contract either (-ffp-contract=off). The rules that device_math.h already
// has (sgd, momentum, nesterov, adam) are used from there.
//
// The norms of clipnorm / global_clipnorm are summed as kernels::SumSquares sums them:
// in double, in pieces of kSumBlock elements from each variable's start, each piece in
// index order and the pieces in order, so the clipped gradient is the CPU's bits. The
// regularization penalty is summed per weight in the same pieces: the CPU's bits for a
// weight of up to kSumBlock elements, within double rounding of it above.
//
// Header-only; the host helpers at the end build the tables the kernels walk. Every
// function is pure (besides writing through its pointer arguments); any thread may call it.
#pragma once

#include <math.h>  // ::sqrt, ::sqrtf, ::fabs: declared __host__ __device__ by nvcc

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/device_math.h"
#include "kernels/kernels.h"

#ifndef RT_HD
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::om {

// kernels::SumSquares' piece (kBlock in src/kernels/optimizer_updates.cc): its partial
// sums restart every kSumBlock elements, so the GPU's must too for the same bits.
constexpr int64_t kSumBlock = 16384;

// ---------------------------------------------------------------- tables
// A piece of at most kSumBlock elements [offset, offset + count) of segment `segment`
// (a variable for the optimizer, a weight for the regularization). A segment's pieces
// are consecutive in its table and start at the segment's first element.
struct Chunk {
  int64_t offset;
  int64_t count;
  int32_t segment;
};

// A regularized weight: its pieces [first_chunk, end_chunk) of the table and its factors.
struct RegSegment {
  int64_t first_chunk;
  int64_t end_chunk;
  double l1;
  double l2;
};

// ---------------------------------------------------------------- the step's description
enum class Rule : int32_t { kSgd, kMomentum, kNesterov, kAdam, kAmsgrad, kRmsprop, kAdagrad, kNadam };
enum class Clip : int32_t { kNone, kValue, kNorm, kGlobalNorm };

// Everything one update needs besides the parameters and gradients: passed by value to
// the kernel. Slots point at device memory on the GPU (host memory in the host test).
struct StepArgs {
  Rule rule = Rule::kSgd;
  // kMomentum, kNesterov: s0 = momentum. kAdam: s0 = m, s1 = v; kAmsgrad: s2 = vhat.
  // kRmsprop: s0 = velocity, s1 = momentum (null without), s2 = average_gradient (null
  // unless centered). kAdagrad: s0 = accumulator. kNadam: s0 = m, s1 = v.
  float* s0 = nullptr;
  float* s1 = nullptr;
  float* s2 = nullptr;
  float lr = 0;        // kSgd, kMomentum, kNesterov, kAdagrad
  float momentum = 0;  // kMomentum, kNesterov
  float alpha = 0, one_minus_b1 = 0, one_minus_b2 = 0, epsilon = 0;  // kAdam, kAmsgrad; epsilon: kAdagrad
  kernels::RmspropScalars rmsprop{};
  kernels::NadamScalars nadam{};

  Clip clip = Clip::kNone;
  float clip_value = 0;              // clipvalue's limit, clipnorm's c
  const float* clip_div = nullptr;   // kNorm: per variable, max(||g||, c)
  const float* clip_scale = nullptr;  // kGlobalNorm: one float, the global scale

  bool decay = false;  // weight_decay: p -= p * weight_decay * lr before the rule
  float weight_decay = 0;
  float decay_lr = 0;
};

// ---------------------------------------------------------------- clipping
// One piece's sum of squares: kernels::SumSquares' SumSquaresRange (products of two
// floats are exact in double, so a fused multiply-add would give the same bits).
// Elements are read eight at a time before they are added (in order), so that a GPU
// thread has eight loads in flight.
RT_HD inline double SumSquares(const float* g, int64_t n) {
  constexpr int kGroup = 8;
  double s = 0.0;
  int64_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    float x[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) x[k] = g[i + k];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) s += static_cast<double>(x[k]) * static_cast<double>(x[k]);
  }
  for (; i < n; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return s;
}

// A variable's sum of squares from its pieces' partial sums [first, end), in order from
// 0.0 (what kernels::SumSquares returns for the variable: 0.0 + p is p for p >= +0 or NaN).
RT_HD inline double VariableSum(const double* partial, int64_t first, int64_t end) {
  double s = 0.0;
  for (int64_t k = first; k < end; ++k) s += partial[k];
  return s;
}

// clipnorm c: the divisor max(l2norm, c) with l2norm = float(sqrt(sum)); a NaN norm stays
// NaN (std::max(a, b) is a < b ? b : a).
RT_HD inline float ClipNormDivisor(double sum, float c) {
  const float l2norm = static_cast<float>(::sqrt(sum));
  return l2norm < c ? c : l2norm;
}

// global_clipnorm c: c * min(1 / c, 1 / norm) + (norm - norm), norm = float(sqrt(sum)).
RT_HD inline float GlobalClipScale(double sum, float c) {
  const float norm = static_cast<float>(::sqrt(sum));
  const float inv_norm = 1.0f / norm, inv_c = 1.0f / c;
  return c * (inv_c < inv_norm ? inv_c : inv_norm) + (norm - norm);
}

// The global sum: each variable's sum (VariableSum) added in variable order from 0.0.
// var_first[v] is variable v's first piece; var_first[num_vars] the end.
RT_HD inline double GlobalSum(const double* partial, const int64_t* var_first, int64_t num_vars) {
  double sum = 0.0;
  for (int64_t v = 0; v < num_vars; ++v) sum += VariableSum(partial, var_first[v], var_first[v + 1]);
  return sum;
}

// kernels::ClipByValue: NaN stays NaN.
RT_HD inline float ClipByValue(float g, float limit) { return g < -limit ? -limit : (g > limit ? limit : g); }

// kernels::ScaleGradients: (g * mul) / div.
RT_HD inline float ScaleGradient(float g, float mul, float div) { return (g * mul) / div; }

// The gradient the rule sees for an element of variable `var`.
RT_HD inline float ClippedGradient(const StepArgs& a, float g, int32_t var) {
  switch (a.clip) {
    case Clip::kNone: return g;
    case Clip::kValue: return ClipByValue(g, a.clip_value);
    case Clip::kNorm: return ScaleGradient(g, a.clip_value, a.clip_div[var]);
    case Clip::kGlobalNorm: return ScaleGradient(g, *a.clip_scale, 1.0f);
  }
  return g;
}

// ---------------------------------------------------------------- weight decay and rules
// kernels::WeightDecay: p - p * weight_decay * lr.
RT_HD inline float WeightDecayStep(float p, float weight_decay, float lr) { return p - p * weight_decay * lr; }

// kernels::AmsgradUpdate: as Adam, with vhat = max(vhat, v) (std::max's NaN rule) under the root.
RT_HD inline void AmsgradStep(float* p, float* m, float* v, float* vhat, float g, float alpha, float one_minus_b1,
                              float one_minus_b2, float eps) {
  const float nm = *m + (g - *m) * one_minus_b1;
  const float nv = *v + (g * g - *v) * one_minus_b2;
  const float nvhat = *vhat < nv ? nv : *vhat;
  *m = nm;
  *v = nv;
  *vhat = nvhat;
  *p = *p - (nm * alpha) / (sqrtf(nvhat) + eps);
}

// kernels::RmspropUpdate for one element; mom and avg may be null (no momentum / not centered).
RT_HD inline void RmspropStep(float* p, float* vel, float* mom, float* avg, float g, const kernels::RmspropScalars& s) {
  const float nvel = s.rho * *vel + s.one_minus_rho * (g * g);
  *vel = nvel;
  float denominator;
  if (avg != nullptr) {
    const float navg = s.rho * *avg + s.one_minus_rho * g;
    *avg = navg;
    denominator = (nvel - navg * navg) + s.epsilon;
  } else {
    denominator = nvel + s.epsilon;
  }
  const float increment = (s.lr * g) / sqrtf(denominator);
  if (mom != nullptr) {
    const float nmom = s.momentum * *mom + increment;
    *mom = nmom;
    *p = *p - nmom;
  } else {
    *p = *p - increment;
  }
}

// kernels::AdagradUpdate: accumulator += g^2; p -= (lr * g) / sqrt(accumulator + eps).
RT_HD inline void AdagradStep(float* p, float* acc, float g, float lr, float eps) {
  const float nacc = *acc + g * g;
  *acc = nacc;
  *p = *p - (lr * g) / sqrtf(nacc + eps);
}

// kernels::NadamUpdate for one element.
RT_HD inline void NadamStep(float* p, float* m, float* v, float g, const kernels::NadamScalars& s) {
  const float nm = *m + (g - *m) * s.one_minus_b1;
  const float nv = *v + (g * g - *v) * s.one_minus_b2;
  *m = nm;
  *v = nv;
  const float m_hat = (s.u_next * nm) / s.one_minus_u_product_next + (s.one_minus_u * g) / s.one_minus_u_product;
  const float v_hat = nv / s.one_minus_b2_power;
  *p = *p - (m_hat * s.lr) / (sqrtf(v_hat) + s.epsilon);
}

// Element i's new parameter from its old one and its (clipped) gradient: weight decay,
// then the rule, which also updates the slots at i.
RT_HD inline float UpdateElement(const StepArgs& a, int64_t i, float g, float p) {
  if (a.decay) p = WeightDecayStep(p, a.weight_decay, a.decay_lr);
  switch (a.rule) {
    case Rule::kSgd:
      return dm::SgdParamStep(p, g, a.lr);
    case Rule::kMomentum:
    case Rule::kNesterov:
      dm::MomentumStep(&p, a.s0 + i, g, a.lr, a.momentum, a.rule == Rule::kNesterov);
      return p;
    case Rule::kAdam:
      dm::AdamStep(&p, a.s0 + i, a.s1 + i, g, a.alpha, a.one_minus_b1, a.one_minus_b2, a.epsilon);
      return p;
    case Rule::kAmsgrad:
      AmsgradStep(&p, a.s0 + i, a.s1 + i, a.s2 + i, g, a.alpha, a.one_minus_b1, a.one_minus_b2, a.epsilon);
      return p;
    case Rule::kRmsprop:
      RmspropStep(&p, a.s0 + i, a.s1 == nullptr ? nullptr : a.s1 + i, a.s2 == nullptr ? nullptr : a.s2 + i, g,
                  a.rmsprop);
      return p;
    case Rule::kAdagrad:
      AdagradStep(&p, a.s0 + i, g, a.lr, a.epsilon);
      return p;
    case Rule::kNadam:
      NadamStep(&p, a.s0 + i, a.s1 + i, g, a.nadam);
      return p;
  }
  return p;
}

// ---------------------------------------------------------------- regularization
// nn::Regularizer::AddGradient for one element: g + scale * (l1 * sign(w) + 2 * l2 * w),
// formed in double and rounded once (sign(0) = 0).
RT_HD inline float RegularizerGradient(float g, float w, double l1, double l2, float scale) {
  const double v = w;
  const double sign = static_cast<double>((v > 0) - (v < 0));
  return static_cast<float>(g + static_cast<double>(scale) * (l1 * sign + 2.0 * l2 * v));
}

// One piece's sums for nn::Regularizer::Penalty: sum |w| and sum w^2, in index order, in
// double (read eight at a time, as SumSquares).
RT_HD inline void PenaltySums(const float* w, int64_t n, double* abs_sum, double* square_sum) {
  constexpr int kGroup = 8;
  double a = 0, s = 0;
  int64_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    float x[kGroup];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) x[k] = w[i + k];
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < kGroup; ++k) {
      const double v = x[k];
      a += ::fabs(v);
      s += v * v;
    }
  }
  for (; i < n; ++i) {
    const double v = w[i];
    a += ::fabs(v);
    s += v * v;
  }
  *abs_sum = a;
  *square_sum = s;
}

// nn::RegularizationPenalty from the pieces' sums: per weight, its pieces' sums in
// order, then l1 * sum|w| + l2 * sum w^2 (a zero factor skipped, as the CPU), added
// over the weights in order from 0.
RT_HD inline double PenaltyTotal(const RegSegment* segments, int64_t num_segments, const double* abs_partial,
                                 const double* square_partial) {
  double total = 0;
  for (int64_t k = 0; k < num_segments; ++k) {
    const RegSegment& r = segments[k];
    double abs_sum = 0, square_sum = 0;
    for (int64_t c = r.first_chunk; c < r.end_chunk; ++c) {
      abs_sum += abs_partial[c];
      square_sum += square_partial[c];
    }
    double penalty = 0;
    if (r.l1 != 0) penalty += r.l1 * abs_sum;
    if (r.l2 != 0) penalty += r.l2 * square_sum;
    total += penalty;
  }
  return total;
}

// ---------------------------------------------------------------- host: tables and scalars
// Appends segment `segment`'s pieces [offset, offset + count) to `chunks` (none when count is 0).
inline void AppendChunks(int64_t offset, int64_t count, int32_t segment, std::vector<Chunk>* chunks) {
  for (int64_t b = 0; b < count; b += kSumBlock) {
    chunks->push_back(Chunk{offset + b, count - b < kSumBlock ? count - b : kSumBlock, segment});
  }
}

// Whether [offset, offset + count) spans tile [0, n) in order (what Optimizer::Apply
// requires of its variables; otherwise it clips the buffer as one variable).
struct Span {
  int64_t offset;
  int64_t count;
};
inline bool SpansTile(const std::vector<Span>& spans, int64_t n) {
  if (spans.empty()) return false;
  int64_t end = 0;
  bool tiles = true;
  for (const Span& s : spans) {
    tiles = tiles && s.offset == end;
    end = s.offset + s.count;
  }
  return tiles && end == n;
}

// The optimizer's table for n parameters: each variable's pieces when `spans` tile
// [0, n), else the buffer as one variable. var_first gets each variable's first piece
// and the end.
inline void BuildVariableChunks(const std::vector<Span>& spans, int64_t n, std::vector<Chunk>* chunks,
                                std::vector<int64_t>* var_first) {
  chunks->clear();
  var_first->clear();
  const std::vector<Span> vars = SpansTile(spans, n) ? spans : std::vector<Span>{Span{0, n}};
  for (size_t v = 0; v < vars.size(); ++v) {
    var_first->push_back(static_cast<int64_t>(chunks->size()));
    AppendChunks(vars[v].offset, vars[v].count, static_cast<int32_t>(v), chunks);
  }
  var_first->push_back(static_cast<int64_t>(chunks->size()));
}

// Nadam's scalars for step t as nn::Nadam::Update computes them; u_product is
// nn::Nadam::UProduct(t).
inline kernels::NadamScalars NadamStepScalars(double lr, double beta_1, double beta_2, double epsilon, int64_t t,
                                              double u_product) {
  const double u = beta_1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t)));
  const double u_next = beta_1 * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t + 1)));
  const double u_product_next = u_product * u_next;
  kernels::NadamScalars s;
  s.lr = static_cast<float>(lr);
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2);
  s.u_next = static_cast<float>(u_next);
  s.one_minus_u = static_cast<float>(1.0 - u);
  s.one_minus_u_product = static_cast<float>(1.0 - u_product);
  s.one_minus_u_product_next = static_cast<float>(1.0 - u_product_next);
  s.one_minus_b2_power = static_cast<float>(1.0 - std::pow(beta_2, static_cast<double>(t)));
  s.epsilon = static_cast<float>(epsilon);
  return s;
}

// RMSprop's scalars as nn::Rmsprop::Update computes them.
inline kernels::RmspropScalars RmspropStepScalars(double lr, double rho, double momentum, double epsilon) {
  kernels::RmspropScalars s;
  s.lr = static_cast<float>(lr);
  s.rho = static_cast<float>(rho);
  s.one_minus_rho = static_cast<float>(1.0 - rho);
  s.momentum = static_cast<float>(momentum);
  s.epsilon = static_cast<float>(epsilon);
  return s;
}

}  // namespace ringtrain::gpu::om
