#include "nn/layers/layer_norm.h"

#include <algorithm>
#include <cmath>

#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> LayerNorm::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "axis", "epsilon", "center", "scale", "rms_scaling", "beta_initializer",
          "gamma_initializer", "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"},
      ctx));
  if (in.empty()) return InvalidArgumentError(ctx + ": layer_normalization needs an input with at least one axis");
  RT_ASSIGN_OR_RETURN(int axes, GetTrailingAxes(j, static_cast<int>(in.size()), ctx,
                                                "ringtrain normalizes trailing axes only: use -1 or a list of the "
                                                "last axes such as [-2, -1]"));
  RT_ASSIGN_OR_RETURN(double epsilon, GetNumber(j, "epsilon", 0.001, 0, true, 1e30, false, ctx));
  RT_ASSIGN_OR_RETURN(bool center, GetBool(j, "center", true, ctx));
  RT_ASSIGN_OR_RETURN(bool scale, GetBool(j, "scale", true, ctx));
  RT_ASSIGN_OR_RETURN(bool rms, GetBool(j, "rms_scaling", false, ctx));
  if (rms) return InvalidArgumentError(ctx + ": 'rms_scaling' true is not supported; set it to false");
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "beta_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "gamma_initializer", "ones", ctx));
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) {
    RT_RETURN_IF_ERROR(CheckNullOnly(j, key, ctx, "remove it (or set it to null)"));
  }
  return std::unique_ptr<Layer>(
      new LayerNorm(std::move(name), in, axes, static_cast<float>(epsilon), center, scale));
}

LayerNorm::LayerNorm(std::string name, const Shape& in, int num_axes, float epsilon, bool center, bool scale)
    : Layer(std::move(name), in, in), epsilon_(epsilon), center_(center), scale_(scale) {
  row_ = 1;
  for (size_t k = in.size() - static_cast<size_t>(num_axes); k < in.size(); ++k) {
    param_shape_.push_back(in[k]);
    row_ *= static_cast<size_t>(in[k]);
  }
  acc_.assign(2 * row_, 0.0);
  g_.assign(row_, 0.0f);
}

std::vector<ParamSpec> LayerNorm::ParamSpecs() const {
  std::vector<ParamSpec> specs;  // Keras' order: gamma, beta
  if (scale_) specs.push_back({"gamma", param_shape_, ParamSpec::Init::kOnes, 0, 0});
  if (center_) specs.push_back({"beta", param_shape_, ParamSpec::Init::kZeros, 0, 0});
  return specs;
}

void LayerNorm::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  size_t k = 0;
  if (scale_) {
    gamma_ = params[k];
    dgamma_ = grads[k++];
  }
  if (center_) {
    beta_ = params[k];
    dbeta_ = grads[k];
  }
}

ops::Op LayerNorm::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kLayerNorm;
  op.epsilon = epsilon_;
  op.row_size = static_cast<int64_t>(row_);
  op.center = center_;
  op.scale = scale_;
  return op;
}

const float* LayerNorm::Forward(const float* in, int batch, bool training) {
  const size_t n = row_;
  rows_ = static_cast<size_t>(batch) * (static_cast<size_t>(input_size()) / n);
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
      for (size_t k = 0; k < n; ++k) o[k] *= gamma_[k];
    }
    if (center_) {
      for (size_t k = 0; k < n; ++k) o[k] += beta_[k];
    }
  }
  return out;
}

const float* LayerNorm::Backward(const float* dy, bool need_din) {
  const size_t n = row_;
  double* sg = acc_.data();      // sum over rows of dy * xhat: dgamma
  double* sb = acc_.data() + n;  // sum over rows of dy: dbeta
  const bool grads = dgamma_ != nullptr || dbeta_ != nullptr;
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
      g[k] = scale_ ? d[k] * gamma_[k] : d[k];
      sum_g += g[k];
      sum_gx += static_cast<double>(g[k]) * ((x[k] - mr) * ir);
    }
    const float mg = static_cast<float>(sum_g / static_cast<double>(n));
    const float mgx = static_cast<float>(sum_gx / static_cast<double>(n));
    float* o = din + r * n;
    for (size_t k = 0; k < n; ++k) o[k] = ir * (g[k] - mg - ((x[k] - mr) * ir) * mgx);
  }
  if (dgamma_ != nullptr) {
    for (size_t k = 0; k < n; ++k) dgamma_[k] = static_cast<float>(sg[k]);
  }
  if (dbeta_ != nullptr) {
    for (size_t k = 0; k < n; ++k) dbeta_[k] = static_cast<float>(sb[k]);
  }
  return din;
}

}  // namespace ringtrain::nn
