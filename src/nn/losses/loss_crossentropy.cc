// The cross-entropies, as keras/src/backend/tensorflow/nn.py computes them, in double
// per example (the float32 outputs are exact in double) and summed in example order.
//   from logits: the numerically stable forms of tf.nn.softmax_cross_entropy_with_logits
//     and tf.nn.sigmoid_cross_entropy_with_logits;
//   from probabilities: clipped to [1e-7, 1 - 1e-7] as Keras clips, and the gradient is
//     that of the clipped expression (zero where an output was clipped).
#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/losses/loss_impl.h"

namespace ringtrain::nn::loss_internal {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void ZeroRow(float* grad, int i, int n) {
  if (grad != nullptr) std::fill(grad + static_cast<size_t>(i) * n, grad + static_cast<size_t>(i + 1) * n, 0.0f);
}

// Keras' SparseCategoricalCrossentropy. From logits it is SparseSoftmaxCrossEntropy
// (today's bits). From probabilities Keras takes log(clip(p)) as logits, so the loss
// is log(sum_c r_c) - log(r_label) with r = clip(p): the clipped row renormalised.
class SparseCategoricalCrossentropy : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(const LossConfig& c) : Loss(c) {}

  double Compute(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) override {
    const int n = num_outputs();
    if (config().from_logits) {
      return SparseSoftmaxCrossEntropy(outputs, labels, batch, n, grad_scale, grad).loss_sum;
    }
    double sum = 0;
    int bad = 0;
    bool pass = false;
    for (int i = 0; i < batch; ++i) {
      const float* p = outputs + static_cast<size_t>(i) * n;
      const int32_t y = labels[i];
      if (!LabelValid(config(), y)) {
        sum = kNaN;
        ++bad;
        ZeroRow(grad, i, n);
        continue;
      }
      double s = 0;
      for (int c = 0; c < n; ++c) s += ClipProbability(p[c], &pass);
      const double r_y = ClipProbability(p[y], &pass);
      sum += std::log(s) - std::log(r_y);
      if (grad == nullptr) continue;
      float* g = grad + static_cast<size_t>(i) * n;
      for (int c = 0; c < n; ++c) {
        const double r = ClipProbability(p[c], &pass);
        const double d = 1.0 / s - (c == y ? 1.0 / r : 0.0);
        g[c] = pass ? static_cast<float>(d * grad_scale) : 0.0f;
      }
    }
    if (bad > 0) ReportBadLabels(bad);
    return sum;
  }
};

// Keras' CategoricalCrossentropy over the one-hot of the label, smoothed to
// t = onehot * (1 - s) + s / n.
class CategoricalCrossentropy : public Loss {
 public:
  explicit CategoricalCrossentropy(const LossConfig& c) : Loss(c) {}

  double Compute(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) override {
    const int n = num_outputs();
    // Without smoothing the target is the one-hot and softmax cross-entropy is the
    // sparse one: the same function keeps today's model bytes.
    if (config().from_logits && config().label_smoothing == 0) {
      return SparseSoftmaxCrossEntropy(outputs, labels, batch, n, grad_scale, grad).loss_sum;
    }
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < batch; ++i) {
      const int32_t y = labels[i];
      if (!LabelValid(config(), y)) {
        sum = kNaN;
        ++bad;
        ZeroRow(grad, i, n);
        continue;
      }
      const float* x = outputs + static_cast<size_t>(i) * n;
      float* g = grad == nullptr ? nullptr : grad + static_cast<size_t>(i) * n;
      sum += config().from_logits ? FromLogits(x, y, grad_scale, g) : FromProbabilities(x, y, grad_scale, g);
    }
    if (bad > 0) ReportBadLabels(bad);
    return sum;
  }

 private:
  double SmoothedTarget(int c, int32_t y) const {
    const double s = config().label_smoothing;
    return (c == y ? 1.0 : 0.0) * (1.0 - s) + s / num_outputs();
  }

  // sum_c t_c * (log_sum_exp(x) - x_c), with the maximum subtracted as
  // SparseSoftmaxCrossEntropy does; d/dx_c = softmax(x)_c - t_c.
  double FromLogits(const float* x, int32_t y, float grad_scale, float* g) const {
    const int n = num_outputs();
    const double m = *std::max_element(x, x + n);
    double e = 0;
    for (int c = 0; c < n; ++c) e += std::exp(static_cast<double>(x[c]) - m);
    const double log_sum = std::log(e);
    double loss = 0;
    for (int c = 0; c < n; ++c) loss += SmoothedTarget(c, y) * (log_sum - (static_cast<double>(x[c]) - m));
    if (g != nullptr) {
      for (int c = 0; c < n; ++c) {
        const double p = std::exp(static_cast<double>(x[c]) - m - log_sum);
        g[c] = static_cast<float>((p - SmoothedTarget(c, y)) * grad_scale);
      }
    }
    return loss;
  }

  // Keras: q = p / sum(p); r = clip(q); loss = -sum_c t_c log r_c. With
  // a_c = dloss/dq_c = -t_c / r_c where the clip passes (else 0),
  // dloss/dp_j = (a_j - sum_c a_c q_c) / sum(p).
  double FromProbabilities(const float* p, int32_t y, float grad_scale, float* g) const {
    const int n = num_outputs();
    double s = 0;
    for (int c = 0; c < n; ++c) s += p[c];
    double loss = 0, dot = 0;
    bool pass = false;
    for (int c = 0; c < n; ++c) {
      const double q = p[c] / s;
      const double r = ClipProbability(q, &pass);
      const double t = SmoothedTarget(c, y);
      loss -= t * std::log(r);
      if (pass) dot += (-t / r) * q;
    }
    if (g != nullptr) {
      for (int c = 0; c < n; ++c) {
        const double q = p[c] / s;
        const double r = ClipProbability(q, &pass);
        const double a = pass ? -SmoothedTarget(c, y) / r : 0.0;
        g[c] = static_cast<float>((a - dot) / s * grad_scale);
      }
    }
    return loss;
  }
};

// Keras' BinaryCrossentropy: element-wise, smoothed to t = target * (1 - s) + s / 2,
// and the mean over the outputs (Keras reduces the last axis with a mean).
class BinaryCrossentropy : public Loss {
 public:
  explicit BinaryCrossentropy(const LossConfig& c) : Loss(c) {}

  double Compute(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) override {
    const int n = num_outputs();
    const double smoothing = config().label_smoothing;
    const bool logits = config().from_logits;
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < batch; ++i) {
      const int32_t y = labels[i];
      if (!LabelValid(config(), y)) {
        sum = kNaN;
        ++bad;
        ZeroRow(grad, i, n);
        continue;
      }
      const float* x = outputs + static_cast<size_t>(i) * n;
      double row = 0;
      for (int o = 0; o < n; ++o) {
        const double t = Target(config(), y, o, n) * (1.0 - smoothing) + 0.5 * smoothing;
        double d = 0;
        row += logits ? FromLogit(x[o], t, &d) : FromProbability(x[o], t, &d);
        if (grad != nullptr) grad[static_cast<size_t>(i) * n + o] = static_cast<float>(d / n * grad_scale);
      }
      sum += row / n;
    }
    if (bad > 0) ReportBadLabels(bad);
    return sum;
  }

 private:
  // tf.nn.sigmoid_cross_entropy_with_logits: max(x, 0) - x t + log1p(exp(-|x|));
  // d/dx = sigmoid(x) - t, sigmoid written so that exp never overflows.
  static double FromLogit(float xf, double t, double* d) {
    const double x = xf;
    const double e = std::exp(-std::abs(x));
    const double sigmoid = x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    *d = sigmoid - t;
    return std::max(x, 0.0) - x * t + std::log1p(e);
  }

  // -(t log r + (1 - t) log(1 - r)), r = clip(p).
  static double FromProbability(float p, double t, double* d) {
    bool pass = false;
    const double r = ClipProbability(p, &pass);
    *d = pass ? -t / r + (1.0 - t) / (1.0 - r) : 0.0;
    return -(t * std::log(r) + (1.0 - t) * std::log(1.0 - r));
  }
};

}  // namespace

std::unique_ptr<Loss> NewSparseCategoricalCrossentropy(const LossConfig& config) {
  return std::make_unique<SparseCategoricalCrossentropy>(config);
}
std::unique_ptr<Loss> NewCategoricalCrossentropy(const LossConfig& config) {
  return std::make_unique<CategoricalCrossentropy>(config);
}
std::unique_ptr<Loss> NewBinaryCrossentropy(const LossConfig& config) {
  return std::make_unique<BinaryCrossentropy>(config);
}

}  // namespace ringtrain::nn::loss_internal
