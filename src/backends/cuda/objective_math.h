// The arithmetic of the GPU objective (backends/cuda/objective_kernels.h): each loss's
// per-example value and output gradient, and each metric's per-example statistics, as
// inline functions that compile for both the host and the device. The kernels
// (objective_kernels.cu) call them one example or one element per thread;
// tests/gpu/objective_math_test.cc runs them on the host in the kernels' loops and
// compares them with the CPU's losses (src/nn/losses) and metrics (src/nn/metrics).
//
// Every function repeats the CPU's statements in its order, in double where the CPU
// uses double, with each product and sum rounded on its own (nvcc builds the kernels
// with --fmad=false; host callers build with -ffp-contract=off). On the host the
// results are the CPU's bits; on the device exp/log/log1p are CUDA's (within an ulp of
// the host's), so the losses agree to rounding while the metrics' counts, which take
// no transcendental function (AUC's sigmoid aside, see AucCode), are the CPU's exactly.
//
// The end of the file holds host-only helpers (no RT_HD): recovering a metric's
// parameters from its sums through nn::Metric's public interface, and checking them.
//
// Header-only, no CUDA dependency and no ringtrain dependency. Pure functions; any
// thread may call them.
#pragma once

#include <math.h>  // ::exp, ::log, ::log1p, ::fabs, ::ceilf: declared __host__ __device__ by nvcc

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#ifndef RT_HD
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::om {

// ---------------------------------------------------------------- common pieces

// Keras' clip bounds as nn/losses/loss.h rounds them (float32 1e-7 and 1 - 1e-7).
constexpr float kProbabilityEpsilon = 1e-7f;
constexpr float kProbabilityOneMinusEpsilon = static_cast<float>(1.0 - 1e-7);
constexpr float kFloatMax = 3.40282346638528859812e+38f;

RT_HD inline bool IsNan(float x) { return x != x; }
RT_HD inline bool IsFinite(float x) { return ::fabsf(x) <= kFloatMax; }

// tf.argmax: the first of equal maxima (NaN never wins over the first element).
RT_HD inline int ArgMax(const float* x, int n) {
  int best = 0;
  for (int c = 1; c < n; ++c) {
    if (x[c] > x[best]) best = c;
  }
  return best;
}

// tf.clip_by_value(p, eps, 1 - eps) and whether its gradient passes (the bounds pass).
RT_HD inline double ClipProbability(double p, bool* passes) {
  *passes = p >= kProbabilityEpsilon && p <= kProbabilityOneMinusEpsilon;
  if (p < kProbabilityEpsilon) return kProbabilityEpsilon;
  if (p > kProbabilityOneMinusEpsilon) return kProbabilityOneMinusEpsilon;
  return p;
}

// ---------------------------------------------------------------- losses

// The loss as the job names it (nn::LossKind).
enum class LossFamily : int32_t { kSparseCategorical, kCategorical, kBinary, kSquared, kAbsolute };

// The computation the GPU runs for a loss (one per code path of the CPU's losses).
enum class LossForm : int32_t {
  kSoftmax,           // sparse, or categorical without smoothing, from logits: nn::SparseSoftmaxCrossEntropy
  kSoftmaxSmoothed,   // categorical from logits with label smoothing
  kSparseProbs,       // sparse from probabilities
  kCategoricalProbs,  // categorical from probabilities (any smoothing)
  kBinaryLogits,      // binary from logits (any smoothing)
  kBinaryProbs,       // binary from probabilities (any smoothing)
  kSquared,           // mean squared error
  kAbsolute,          // mean absolute error
};

struct LossParams {
  LossForm form = LossForm::kSoftmax;
  LossFamily family = LossFamily::kSparseCategorical;
  int32_t n = 0;         // the model's outputs per example
  double smoothing = 0;  // label_smoothing (categorical and binary)
};

// The form nn::Loss::Create builds for a (valid) configuration.
inline LossParams MakeLossParams(LossFamily family, bool from_logits, double smoothing, int n) {
  LossParams p;
  p.family = family;
  p.n = n;
  p.smoothing = smoothing;
  switch (family) {
    case LossFamily::kSparseCategorical:
      p.form = from_logits ? LossForm::kSoftmax : LossForm::kSparseProbs;
      break;
    case LossFamily::kCategorical:
      p.form = from_logits ? (smoothing == 0 ? LossForm::kSoftmax : LossForm::kSoftmaxSmoothed)
                           : LossForm::kCategoricalProbs;
      break;
    case LossFamily::kBinary:
      p.form = from_logits ? LossForm::kBinaryLogits : LossForm::kBinaryProbs;
      break;
    case LossFamily::kSquared: p.form = LossForm::kSquared; break;
    case LossFamily::kAbsolute: p.form = LossForm::kAbsolute; break;
  }
  return p;
}

// nn::loss_internal::LabelValid: whether the loss can take `label`.
RT_HD inline bool LabelValid(const LossParams& p, int32_t label) {
  const bool one_output = p.n == 1;
  switch (p.family) {
    case LossFamily::kSquared:
    case LossFamily::kAbsolute:
      return one_output || (label >= 0 && label < p.n);
    case LossFamily::kBinary:
      return one_output ? (label == 0 || label == 1) : (label >= 0 && label < p.n);
    default:
      return label >= 0 && label < p.n;
  }
}

// The target of output o before smoothing: the one-hot of the label, or with one
// output the label itself.
RT_HD inline double Target(int32_t label, int o, int n) {
  if (n == 1) return static_cast<double>(label);
  return o == label ? 1.0 : 0.0;
}

// The categorical cross-entropies' smoothed one-hot target.
RT_HD inline double SmoothedTarget(const LossParams& p, int c, int32_t y) {
  return (c == y ? 1.0 : 0.0) * (1.0 - p.smoothing) + p.smoothing / p.n;
}

// The binary cross-entropy's smoothed target of output o.
RT_HD inline double BinaryTarget(const LossParams& p, int o, int32_t y) {
  return Target(y, o, p.n) * (1.0 - p.smoothing) + 0.5 * p.smoothing;
}

// tf.nn.sigmoid_cross_entropy_with_logits and its derivative (d/dx = sigmoid(x) - t).
RT_HD inline double BinaryFromLogit(float xf, double t, double* d) {
  const double x = xf;
  const double e = ::exp(-::fabs(x));
  const double sigmoid = x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
  *d = sigmoid - t;
  return (x < 0.0 ? 0.0 : x) - x * t + ::log1p(e);
}

// -(t log r + (1 - t) log(1 - r)), r = clip(p); the derivative is 0 where p was clipped.
RT_HD inline double BinaryFromProbability(float p, double t, double* d) {
  bool pass = false;
  const double r = ClipProbability(p, &pass);
  *d = pass ? -t / r + (1.0 - t) / (1.0 - r) : 0.0;
  return -(t * ::log(r) + (1.0 - t) * ::log(1.0 - r));
}

// What the gradient of a row needs from the whole row:
//   kSoftmax, kSoftmaxSmoothed: a = max(x), b = log(sum exp(x - max));
//   kSparseProbs: a = sum of clip(p); kCategoricalProbs: a = sum(p), b = sum_c a_c q_c;
//   the element-wise losses: nothing.
struct RowStats {
  double a = 0;
  double b = 0;
};

// One example's loss (NaN when the loss cannot take its label: the CPU's batch sum is
// NaN then, and so is an ordered sum with a NaN term), and the row's statistics for
// LossGrad. x: the example's p.n outputs.
RT_HD inline double LossRow(const LossParams& p, const float* x, int32_t y, RowStats* st) {
  const int n = p.n;
  const bool valid = LabelValid(p, y);
  bool pass = false;
  switch (p.form) {
    case LossForm::kSoftmax:
    case LossForm::kSoftmaxSmoothed: {
      // The softmax statistics are the row's whatever its label: the sparse gradient
      // of a row with a bad label is softmax * grad_scale on the CPU.
      const double m = x[ArgMax(x, n)];
      double e = 0;
      for (int c = 0; c < n; ++c) e += ::exp(static_cast<double>(x[c]) - m);
      const double log_sum = ::log(e);
      st->a = m;
      st->b = log_sum;
      if (!valid) return NAN;
      if (p.form == LossForm::kSoftmax) return log_sum - (static_cast<double>(x[y]) - m);
      double loss = 0;
      for (int c = 0; c < n; ++c) loss += SmoothedTarget(p, c, y) * (log_sum - (static_cast<double>(x[c]) - m));
      return loss;
    }
    case LossForm::kSparseProbs: {
      if (!valid) return NAN;
      double s = 0;
      for (int c = 0; c < n; ++c) s += ClipProbability(x[c], &pass);
      st->a = s;
      const double r_y = ClipProbability(x[y], &pass);
      return ::log(s) - ::log(r_y);
    }
    case LossForm::kCategoricalProbs: {
      if (!valid) return NAN;
      double s = 0;
      for (int c = 0; c < n; ++c) s += x[c];
      double loss = 0, dot = 0;
      for (int c = 0; c < n; ++c) {
        const double q = x[c] / s;
        const double r = ClipProbability(q, &pass);
        const double t = SmoothedTarget(p, c, y);
        loss -= t * ::log(r);
        if (pass) dot += (-t / r) * q;
      }
      st->a = s;
      st->b = dot;
      return loss;
    }
    case LossForm::kBinaryLogits:
    case LossForm::kBinaryProbs: {
      if (!valid) return NAN;
      double row = 0, d = 0;
      for (int o = 0; o < n; ++o) {
        const double t = BinaryTarget(p, o, y);
        row += p.form == LossForm::kBinaryLogits ? BinaryFromLogit(x[o], t, &d) : BinaryFromProbability(x[o], t, &d);
      }
      return row / n;
    }
    case LossForm::kSquared:
    case LossForm::kAbsolute: {
      if (!valid) return NAN;
      double row = 0;
      for (int o = 0; o < n; ++o) {
        const double e = static_cast<double>(x[o]) - Target(y, o, n);
        row += p.form == LossForm::kSquared ? e * e : ::fabs(e);
      }
      return row / n;
    }
  }
  return NAN;
}

// d(loss of the example)/d(x[c]) * grad_scale, as the CPU writes it (0 on a row whose
// label the loss cannot take, except the sparse softmax's softmax * grad_scale).
RT_HD inline float LossGrad(const LossParams& p, const float* x, int c, int32_t y, const RowStats& st,
                            float grad_scale) {
  const int n = p.n;
  const bool valid = LabelValid(p, y);
  bool pass = false;
  switch (p.form) {
    case LossForm::kSoftmax: {
      const double prob = ::exp(static_cast<double>(x[c]) - st.a - st.b);
      return static_cast<float>((prob - (c == y ? 1.0 : 0.0)) * grad_scale);
    }
    case LossForm::kSoftmaxSmoothed: {
      if (!valid) return 0.0f;
      const double prob = ::exp(static_cast<double>(x[c]) - st.a - st.b);
      return static_cast<float>((prob - SmoothedTarget(p, c, y)) * grad_scale);
    }
    case LossForm::kSparseProbs: {
      if (!valid) return 0.0f;
      const double r = ClipProbability(x[c], &pass);
      const double d = 1.0 / st.a - (c == y ? 1.0 / r : 0.0);
      return pass ? static_cast<float>(d * grad_scale) : 0.0f;
    }
    case LossForm::kCategoricalProbs: {
      if (!valid) return 0.0f;
      const double q = x[c] / st.a;
      const double r = ClipProbability(q, &pass);
      const double a = pass ? -SmoothedTarget(p, c, y) / r : 0.0;
      return static_cast<float>((a - st.b) / st.a * grad_scale);
    }
    case LossForm::kBinaryLogits:
    case LossForm::kBinaryProbs: {
      if (!valid) return 0.0f;
      const double t = BinaryTarget(p, c, y);
      double d = 0;
      if (p.form == LossForm::kBinaryLogits) {
        BinaryFromLogit(x[c], t, &d);
      } else {
        BinaryFromProbability(x[c], t, &d);
      }
      return static_cast<float>(d / n * grad_scale);
    }
    case LossForm::kSquared:
    case LossForm::kAbsolute: {
      if (!valid) return 0.0f;
      const double e = static_cast<double>(x[c]) - Target(y, c, n);
      // d|e|/de is sign(e), 0 at 0 as TF's Abs gradient.
      const double d = p.form == LossForm::kSquared ? 2.0 * e : static_cast<double>((e > 0) - (e < 0));
      return static_cast<float>(d / n * grad_scale);
    }
  }
  return NAN;
}

// ---------------------------------------------------------------- metrics

enum class MetricForm : int32_t {
  kArgmaxAccuracy,  // sparse_categorical_accuracy, categorical_accuracy (and "accuracy" with outputs >= 2)
  kBinaryAccuracy,  // binary_accuracy (and "accuracy" with one output)
  kTopK,            // top_k_categorical_accuracy, sparse_top_k_categorical_accuracy
  kAuc,             // auc (one output)
};

struct MetricParams {
  MetricForm form = MetricForm::kArgmaxAccuracy;
  int32_t n = 0;           // the model's outputs per example
  double threshold = 0.5;  // kBinaryAccuracy
  int32_t k = 5;           // kTopK
  int32_t num_thresholds = 200;  // kAuc
  bool from_logits = false;      // kAuc
};

// Sums the metric adds to: [score sum, examples] for the accuracies, [tp T, fp T, tn T,
// fn T] for AUC.
inline int MetricNumSums(const MetricParams& m) { return m.form == MetricForm::kAuc ? 4 * m.num_thresholds : 2; }

// One example's score for the accuracies (the CPU adds them in example order).
RT_HD inline double MetricScore(const MetricParams& m, const float* x, int32_t y) {
  const int n = m.n;
  switch (m.form) {
    case MetricForm::kArgmaxAccuracy:
      // A label out of range matches nothing.
      return (y >= 0 && y < n && ArgMax(x, n) == y) ? 1.0 : 0.0;
    case MetricForm::kBinaryAccuracy: {
      int right = 0;
      for (int o = 0; o < n; ++o) {
        const double target = n == 1 ? static_cast<double>(y) : (o == y ? 1.0 : 0.0);
        const double predicted = x[o] > m.threshold ? 1.0 : 0.0;
        right += predicted == target ? 1 : 0;
      }
      return n == 1 ? right : static_cast<double>(right) / n;
    }
    case MetricForm::kTopK: {
      // tf.math.in_top_k: fewer than k outputs strictly greater than the label's; a
      // label out of range or a non-finite output in the row is a miss.
      bool hit = y >= 0 && y < n && IsFinite(x[y]);
      int greater = 0;
      for (int c = 0; hit && c < n; ++c) {
        if (!IsFinite(x[c])) hit = false;
        if (x[c] > x[y]) ++greater;
      }
      return hit && greater < m.k ? 1.0 : 0.0;
    }
    case MetricForm::kAuc:
      break;
  }
  return 0.0;
}

// AUC: one example as (bucket + 1) * 2 + positive, where the example lies above
// thresholds 0 .. bucket and bucket + 1 = 0 for a NaN output (above none; still counted
// among the positives or negatives). A label is positive when it is not 0. With
// from_logits the sigmoid is the CPU's double expression rounded to float: CUDA's exp
// is within an ulp of the host's, which moves the float only when the double lands
// within an ulp of a float rounding boundary (a chance of about 2^-29 per example).
RT_HD inline int32_t AucCode(const MetricParams& m, float x, int32_t y) {
  const int32_t positive = y != 0 ? 1 : 0;
  float p = x;
  if (m.from_logits) p = static_cast<float>(1.0 / (1.0 + ::exp(-static_cast<double>(p))));
  if (IsNan(p)) return positive;
  p = p < 0.0f ? 0.0f : p;  // std::max(p, 0.0f)
  p = 1.0f < p ? 1.0f : p;  // std::min(p, 1.0f)
  const float scaled = p * static_cast<float>(m.num_thresholds - 1);
  int bucket = static_cast<int>(::ceilf(scaled)) - 1;
  if (bucket < 0) bucket = 0;
  return (bucket + 1) * 2 + positive;
}

// Counts one example (its AucCode) at threshold k: tp/fp when it lies above k, and
// the totals of positives and negatives.
struct AucCounts {
  int64_t tp = 0, fp = 0, positives = 0, negatives = 0;
};
RT_HD inline void AucCount(int32_t code, int k, AucCounts* c) {
  const int32_t positive = code & 1;
  const int32_t bucket_plus_one = code >> 1;
  if (positive) {
    ++c->positives;
  } else {
    ++c->negatives;
  }
  if (bucket_plus_one > k) {  // bucket >= k
    if (positive) {
      ++c->tp;
    } else {
      ++c->fp;
    }
  }
}

// Threshold k's four sums as the CPU lays them out: sums[k] tp, sums[T + k] fp,
// sums[2T + k] tn, sums[3T + k] fn (integers, exact in double).
RT_HD inline void AucWrite(const AucCounts& c, int k, int num_thresholds, double* sums) {
  const int t = num_thresholds;
  sums[k] = static_cast<double>(c.tp);
  sums[t + k] = static_cast<double>(c.fp);
  sums[2 * t + k] = static_cast<double>(c.negatives - c.fp);
  sums[3 * t + k] = static_cast<double>(c.positives - c.tp);
}

// ---------------------------------------------------------------- host-only reference

// The metric's sums of a batch as the kernels compute them, in their order: the
// reference the host test and DescribeMetric compare with the CPU metric.
inline std::vector<double> MetricSums(const MetricParams& m, const float* outputs, const int32_t* labels,
                                      int batch) {
  std::vector<double> sums(static_cast<size_t>(MetricNumSums(m)), 0.0);
  if (m.form == MetricForm::kAuc) {
    std::vector<int32_t> codes(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) codes[i] = AucCode(m, outputs[i], labels[i]);
    for (int k = 0; k < m.num_thresholds; ++k) {
      AucCounts c;
      for (int i = 0; i < batch; ++i) AucCount(codes[i], k, &c);
      AucWrite(c, k, m.num_thresholds, sums.data());
    }
    return sums;
  }
  double score = 0;
  for (int i = 0; i < batch; ++i) score += MetricScore(m, outputs + static_cast<size_t>(i) * m.n, labels[i]);
  sums[0] = score;
  sums[1] = batch;
  return sums;
}

// A metric seen only through nn::Metric's interface: its Accumulate, on zeroed sums.
using AccumulateFn = std::function<void(const float* outputs, const int32_t* labels, int batch, double* sums)>;

namespace internal {

inline std::vector<double> Probe(const AccumulateFn& accumulate, int num_sums, const std::vector<float>& outputs,
                                 const std::vector<int32_t>& labels) {
  std::vector<double> sums(static_cast<size_t>(num_sums), 0.0);
  accumulate(outputs.data(), labels.data(), static_cast<int>(labels.size()), sums.data());
  return sums;
}

// Floats in the order of their values, as integers (and back), for a bisection over floats.
inline int64_t FloatOrder(float f) {
  int32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits >= 0 ? bits : -static_cast<int64_t>(bits & 0x7fffffff);
}
inline float OrderFloat(int64_t o) {
  const int32_t bits = o >= 0 ? static_cast<int32_t>(o) : static_cast<int32_t>((-o) | 0x80000000LL);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Small deterministic generator for the check's batches.
struct Mix {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }
  float Uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>((Next() >> 40) * (1.0 / 16777216.0)); }
};

}  // namespace internal

// Batches that exercise what tells metrics apart: ties, values at and next to
// thresholds and bucket edges, 0, +-0, 1, NaN, +-inf, labels in and out of range.
inline void CheckBatches(const MetricParams& m, std::vector<std::vector<float>>* outputs,
                         std::vector<std::vector<int32_t>>* labels) {
  internal::Mix mix{0x6f626a656374ULL + static_cast<uint64_t>(m.n)};
  std::vector<float> special = {0.0f, -0.0f, 1.0f, 0.5f, -1.0f, 1e-6f, -1e-6f, 2.0f, -3.5f, 1e30f, -1e30f,
                                kFloatMax, -kFloatMax, kProbabilityEpsilon, kProbabilityOneMinusEpsilon};
  if (m.form == MetricForm::kBinaryAccuracy) {
    const float f = static_cast<float>(m.threshold);
    for (float v : {f, nextafterf(f, 2 * kFloatMax), nextafterf(f, -2 * kFloatMax)}) special.push_back(v);
  }
  if (m.form == MetricForm::kAuc) {
    const int t = m.num_thresholds;
    for (int j = 0; j < 12; ++j) {
      const int k = j < 6 ? j : t - 1 - (j - 6);
      if (k < 0 || k >= t) continue;
      const float edge = static_cast<float>(k) / static_cast<float>(t - 1);
      for (float v : {edge, nextafterf(edge, 2.0f), nextafterf(edge, -1.0f)}) special.push_back(v);
    }
  }
  const int n = m.n;
  for (int round = 0; round < 4; ++round) {
    const int batch = 37 + 5 * round;
    std::vector<float> out(static_cast<size_t>(batch) * n);
    std::vector<int32_t> lab(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) {
      for (int o = 0; o < n; ++o) {
        float& v = out[static_cast<size_t>(i) * n + o];
        switch (round == 0 ? 0 : mix.Below(6)) {
          case 0: v = mix.Uniform(-1.5f, 2.0f); break;
          case 1: v = static_cast<float>(mix.Below(5)) * 0.25f; break;  // ties
          case 2: v = special[static_cast<size_t>(mix.Below(static_cast<int>(special.size())))]; break;
          case 3: v = mix.Uniform(0.0f, 1.0f); break;
          case 4: v = mix.Below(16) == 0 ? NAN : mix.Uniform(-8.0f, 8.0f); break;
          default: v = mix.Below(16) == 0 ? (mix.Below(2) ? INFINITY : -INFINITY) : mix.Uniform(-0.1f, 1.1f); break;
        }
      }
      const int r = mix.Below(12);
      lab[i] = r == 0 ? -1 : r == 1 ? n : r == 2 ? 2 : (n == 1 ? mix.Below(2) : mix.Below(n));
    }
    outputs->push_back(std::move(out));
    labels->push_back(std::move(lab));
  }
  // Rows that tell the accuracies apart, for every label (and two out of range): all
  // equal, the first and last tied at the maximum, a +inf or NaN at the label or at 0,
  // increasing, decreasing.
  std::vector<float> out;
  std::vector<int32_t> lab;
  for (int y = -1; y <= n; ++y) {
    for (int shape = 0; shape < 7; ++shape) {
      for (int o = 0; o < n; ++o) {
        float v = 0.5f;
        switch (shape) {
          case 1: v = (o == 0 || o == n - 1) ? 0.75f : 0.25f; break;
          case 2: v = o == y ? INFINITY : 0.25f; break;
          case 3: v = o == y ? NAN : 0.25f; break;
          case 4: v = o == 0 ? NAN : 0.25f * static_cast<float>(o); break;
          case 5: v = static_cast<float>(o); break;
          case 6: v = static_cast<float>(n - o); break;
          default: break;
        }
        out.push_back(v);
      }
      lab.push_back(y);
    }
  }
  outputs->push_back(std::move(out));
  labels->push_back(std::move(lab));
}

// Whether `m` gives exactly the sums (every bit) `accumulate` gives on CheckBatches.
inline bool SameSums(const MetricParams& m, const AccumulateFn& accumulate, int num_sums) {
  if (MetricNumSums(m) != num_sums) return false;
  std::vector<std::vector<float>> outputs;
  std::vector<std::vector<int32_t>> labels;
  CheckBatches(m, &outputs, &labels);
  for (size_t b = 0; b < outputs.size(); ++b) {
    const std::vector<double> want = internal::Probe(accumulate, num_sums, outputs[b], labels[b]);
    const std::vector<double> got =
        MetricSums(m, outputs[b].data(), labels[b].data(), static_cast<int>(labels[b].size()));
    if (std::memcmp(want.data(), got.data(), want.size() * sizeof(double)) != 0) return false;
  }
  return true;
}

// Recovers the parameters of a metric of nn/metrics/metrics.h from its sums on crafted
// examples (nn::Metric exposes its kind and arguments only through them), then checks
// them with SameSums. `argmax_accuracy`: engine::Objective::argmax_accuracy. Returns
// false (and says why in *why) for a metric these forms do not reproduce exactly.
// Parameters that do not change any sum are left at a value equivalent to the metric's
// (a threshold as the float at or below it, k above the outputs as the outputs, an AUC
// over 2 thresholds as not from logits).
inline bool IdentifyMetric(const AccumulateFn& accumulate, int num_sums, int num_outputs, bool argmax_accuracy,
                           MetricParams* out, std::string* why) {
  using internal::Probe;
  const int n = num_outputs;
  MetricParams m;
  m.n = n;
  if (num_sums != 2) {
    // AUC: four sums per threshold, one output.
    if (n != 1 || num_sums < 8 || num_sums % 4 != 0) {
      *why = "its " + std::to_string(num_sums) + " sums match no metric the GPU computes";
      return false;
    }
    m.form = MetricForm::kAuc;
    m.num_thresholds = num_sums / 4;
    m.from_logits = false;
    if (m.num_thresholds >= 3) {
      // A positive at 1e-6: above threshold 1 only through a sigmoid (0.5000002 * (T-1) > 1).
      const std::vector<double> s = Probe(accumulate, num_sums, {1e-6f}, {1});
      m.from_logits = s[1] == 1.0;
    }
  } else if (argmax_accuracy) {
    m.form = MetricForm::kArgmaxAccuracy;
  } else {
    // Binary accuracy or top-k. One output: a huge output labelled 1 is right for
    // binary accuracy and out of range for top-k. More: an all-zero row labelled 0 is a
    // hit for top-k (no output greater) and partly wrong for binary accuracy.
    const std::vector<float> zeros(static_cast<size_t>(n), 0.0f);
    const bool top_k = n == 1 ? Probe(accumulate, num_sums, {kFloatMax}, {1})[0] == 0.0
                              : Probe(accumulate, num_sums, zeros, {0})[0] == 1.0;
    if (top_k) {
      // Rows 0, 1, .., n-1 labelled 0 .. n-1: label y is a hit iff n - 1 - y < k, so the
      // hits are min(k, n).
      m.form = MetricForm::kTopK;
      std::vector<float> rows(static_cast<size_t>(n) * n);
      std::vector<int32_t> labels(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        labels[i] = i;
        for (int c = 0; c < n; ++c) rows[static_cast<size_t>(i) * n + c] = static_cast<float>(c);
      }
      m.k = static_cast<int32_t>(Probe(accumulate, num_sums, rows, labels)[0]);
    } else {
      // The threshold: the largest float f with f > threshold false (x > threshold iff
      // x > f for every float x), by bisection over the floats' order. A row whose
      // output 0 is v and whose target there is 1 (label 1 with one output, label 0
      // with more); the other outputs sit at -FLT_MAX, predicted 0 (the threshold is
      // above -1e30) with target 0, so they are right: the row scores (n - 1 + [v >
      // threshold]) / n.
      m.form = MetricForm::kBinaryAccuracy;
      auto above = [&](float v) {
        std::vector<float> row(static_cast<size_t>(n), -kFloatMax);
        row[0] = v;
        const double score = Probe(accumulate, num_sums, row, {n == 1 ? 1 : 0})[0];
        return score * n > n - 0.5;
      };
      int64_t lo = internal::FloatOrder(-kFloatMax), hi = internal::FloatOrder(kFloatMax);
      if (above(internal::OrderFloat(lo)) || !above(internal::OrderFloat(hi))) {
        *why = "it is no accuracy the GPU computes (its threshold is outside the floats)";
        return false;
      }
      while (hi - lo > 1) {  // above(lo) is false, above(hi) is true
        const int64_t mid = lo + (hi - lo) / 2;
        (above(internal::OrderFloat(mid)) ? hi : lo) = mid;
      }
      m.threshold = static_cast<double>(internal::OrderFloat(lo));
    }
  }
  if (!SameSums(m, accumulate, num_sums)) {
    *why = "its sums on test batches differ from every metric the GPU computes";
    return false;
  }
  *out = m;
  return true;
}

}  // namespace ringtrain::gpu::om
