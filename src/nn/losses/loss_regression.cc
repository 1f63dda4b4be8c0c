// Keras' MeanSquaredError and MeanAbsoluteError over the targets of loss.h (the
// one-hot of the label, or the label itself with one output): the per-example loss is
// the mean over the outputs, as Keras reduces the last axis.
#include <cmath>
#include <limits>

#include "nn/losses/loss_impl.h"

namespace ringtrain::nn::loss_internal {
namespace {

template <bool kSquared>
class MeanError : public Loss {
 public:
  explicit MeanError(const LossConfig& c) : Loss(c) {}

  double Compute(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) override {
    const int n = num_outputs();
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < batch; ++i) {
      const int32_t y = labels[i];
      const bool valid = LabelValid(config(), y);
      if (!valid) {
        sum = std::numeric_limits<double>::quiet_NaN();
        ++bad;
      }
      double row = 0;
      for (int o = 0; o < n; ++o) {
        const size_t at = static_cast<size_t>(i) * n + o;
        const double e = static_cast<double>(outputs[at]) - Target(config(), y, o, n);
        // d|e|/de is sign(e), 0 at 0 as TF's Abs gradient.
        const double d = kSquared ? 2.0 * e : static_cast<double>((e > 0) - (e < 0));
        row += kSquared ? e * e : std::abs(e);
        if (grad != nullptr) grad[at] = valid ? static_cast<float>(d / n * grad_scale) : 0.0f;
      }
      if (valid) sum += row / n;
    }
    if (bad > 0) ReportBadLabels(bad);
    return sum;
  }
};

}  // namespace

std::unique_ptr<Loss> NewMeanSquaredError(const LossConfig& config) {
  return std::make_unique<MeanError<true>>(config);
}
std::unique_ptr<Loss> NewMeanAbsoluteError(const LossConfig& config) {
  return std::make_unique<MeanError<false>>(config);
}

}  // namespace ringtrain::nn::loss_internal
