// LayerNorm on the CPU: each example's values over the normalized trailing axes (a row
// of op.row_size contiguous elements) scaled to mean 0 and variance 1:
//   out = gamma * (x - mean) / sqrt(var + eps) + beta   (biased variance, per row)
//   dx  = invstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma
// gamma and beta have the normalized axes' shape. The same in training and inference.
// Sums in double.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

class LayerNormKernel final : public OneInputKernel {
 public:
  explicit LayerNormKernel(const ops::Node& node)
      : node_(node),
        row_(static_cast<size_t>(node.op.row_size)),
        epsilon_(node.op.epsilon),
        center_(node.op.center),
        scale_(node.op.scale),
        input_size_(InputSize(node)) {
    acc_.assign(2 * row_, 0.0);
    g_.assign(row_, 0.0f);
  }

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override {
    // Keras' weight order: gamma, beta.
    const float* gamma = scale_ ? Param(args, node_, 0) : nullptr;
    const float* beta = center_ ? Param(args, node_, scale_ ? 1 : 0) : nullptr;
    const size_t n = row_;
    rows_ = static_cast<size_t>(batch) * (static_cast<size_t>(input_size_) / n);
    float* out = EnsureSize(out_, rows_ * n);
    float* mean = EnsureSize(mean_, rows_);
    float* invstd = EnsureSize(invstd_, rows_);
    x_ = in;
    for (size_t r = 0; r < rows_; ++r) {
      const float* x = in + r * n;
      double s = 0;
      for (size_t k = 0; k < n; ++k) s += x[k];
      const double m = s / static_cast<double>(n);
      double q = 0;  // the row is in cache: an exact second pass for the variance
      for (size_t k = 0; k < n; ++k) q += (x[k] - m) * (x[k] - m);
      mean[r] = static_cast<float>(m);
      invstd[r] = 1.0f / std::sqrt(static_cast<float>(q / static_cast<double>(n)) + epsilon_);
      float* o = out + r * n;
      const float mr = mean[r], ir = invstd[r];
      for (size_t k = 0; k < n; ++k) o[k] = (x[k] - mr) * ir;
      if (scale_) {
        for (size_t k = 0; k < n; ++k) o[k] *= gamma[k];
      }
      if (center_) {
        for (size_t k = 0; k < n; ++k) o[k] += beta[k];
      }
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs& args, const float* dy, bool need_din) override {
    const float* gamma = scale_ ? Param(args, node_, 0) : nullptr;
    float* dgamma = scale_ ? Grad(args, node_, 0) : nullptr;  // null when frozen
    float* dbeta = center_ ? Grad(args, node_, scale_ ? 1 : 0) : nullptr;
    const size_t n = row_;
    double* sg = acc_.data();      // sum over rows of dy * xhat: dgamma
    double* sb = acc_.data() + n;  // sum over rows of dy: dbeta
    const bool grads = dgamma != nullptr || dbeta != nullptr;
    if (grads) std::fill(acc_.begin(), acc_.end(), 0.0);
    float* din = need_din ? EnsureSize(din_, rows_ * n) : nullptr;
    float* g = g_.data();
    for (size_t r = 0; r < rows_; ++r) {
      const float* d = dy + r * n;
      const float* x = x_ + r * n;
      const float mr = mean_[r], ir = invstd_[r];
      if (grads) {
        for (size_t k = 0; k < n; ++k) {
          sg[k] += static_cast<double>(d[k]) * ((x[k] - mr) * ir);
          sb[k] += d[k];
        }
      }
      if (din == nullptr) continue;
      double sum_g = 0, sum_gx = 0;
      for (size_t k = 0; k < n; ++k) {
        g[k] = scale_ ? d[k] * gamma[k] : d[k];
        sum_g += g[k];
        sum_gx += static_cast<double>(g[k]) * ((x[k] - mr) * ir);
      }
      const float mg = static_cast<float>(sum_g / static_cast<double>(n));
      const float mgx = static_cast<float>(sum_gx / static_cast<double>(n));
      float* o = din + r * n;
      for (size_t k = 0; k < n; ++k) o[k] = ir * (g[k] - mg - ((x[k] - mr) * ir) * mgx);
    }
    if (dgamma != nullptr) {
      for (size_t k = 0; k < n; ++k) dgamma[k] = static_cast<float>(sg[k]);
    }
    if (dbeta != nullptr) {
      for (size_t k = 0; k < n; ++k) dbeta[k] = static_cast<float>(sb[k]);
    }
    return din;
  }

 private:
  const ops::Node node_;
  const size_t row_;  // elements per row (the normalized axes' product)
  const float epsilon_;
  const bool center_, scale_;
  const int64_t input_size_;

  const float* x_ = nullptr;  // the input of the last Forward
  size_t rows_ = 0;
  std::vector<float> mean_, invstd_;  // per row
  std::vector<double> acc_;           // dgamma and dbeta sums
  std::vector<float> g_;              // one row of dy * gamma
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewLayerNormKernel(const ops::Node& node) {
  return std::make_unique<LayerNormKernel>(node);
}

}  // namespace ringtrain::backends::cpu
