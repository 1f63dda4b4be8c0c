#include "nn/layers/batch_norm.h"

#include <algorithm>
#include <cmath>

#include "kernels/norm.h"
#include "nn/keras/json_fields.h"
#include "nn/layers/norm_fields.h"

namespace ringtrain::nn {

namespace {

// Row counts travel through the float all-reduce as two exact parts (each below 2^24
// after summing over replicas as long as the total stays below 2^36 rows).
constexpr float kCountBase = 4096.0f;

}  // namespace

StatusOr<std::unique_ptr<Layer>> BatchNorm::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  return CreateImpl(j, std::move(name), in, ctx, /*sync_class=*/false);
}

StatusOr<std::unique_ptr<Layer>> BatchNorm::CreateSync(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx) {
  return CreateImpl(j, std::move(name), in, ctx, /*sync_class=*/true);
}

StatusOr<std::unique_ptr<Layer>> BatchNorm::CreateImpl(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx, bool sync_class) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "name", "axis", "momentum", "epsilon", "center", "scale", "synchronized", "beta_initializer",
          "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer", "beta_regularizer",
          "gamma_regularizer", "beta_constraint", "gamma_constraint", "renorm", "renorm_clipping",
          "renorm_momentum", "fused", "virtual_batch_size", "adjustment"},
      ctx));
  if (in.empty()) return InvalidArgumentError(ctx + ": batch_normalization needs an input with a channel axis");
  const char* last_axis = "ringtrain normalizes the last axis only (channels last): use axis -1";
  RT_ASSIGN_OR_RETURN(int axes, GetTrailingAxes(j, static_cast<int>(in.size()), ctx, last_axis));
  if (axes != 1) return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(j.at("axis")) + " is not supported; " + last_axis);
  Options o;
  RT_ASSIGN_OR_RETURN(double momentum, GetNumber(j, "momentum", 0.99, 0, false, 1, false, ctx));
  RT_ASSIGN_OR_RETURN(double epsilon, GetNumber(j, "epsilon", 0.001, 0, true, 1e30, false, ctx));
  o.momentum = static_cast<float>(momentum);
  o.epsilon = static_cast<float>(epsilon);
  RT_ASSIGN_OR_RETURN(o.center, GetBool(j, "center", true, ctx));
  RT_ASSIGN_OR_RETURN(o.scale, GetBool(j, "scale", true, ctx));
  RT_ASSIGN_OR_RETURN(o.synchronized, GetBool(j, "synchronized", sync_class, ctx));
  if (sync_class && !o.synchronized) {
    return InvalidArgumentError(ctx + ": 'synchronized' is false in a SyncBatchNormalization; use BatchNormalization");
  }
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "beta_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "gamma_initializer", "ones", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "moving_mean_initializer", "zeros", ctx));
  RT_RETURN_IF_ERROR(CheckDefaultInitializer(j, "moving_variance_initializer", "ones", ctx));
  const char* remove = "remove it (or set it to null)";
  for (const char* key : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint",
                          "renorm_clipping", "virtual_batch_size", "adjustment"}) {
    RT_RETURN_IF_ERROR(CheckNullOnly(j, key, ctx, remove));
  }
  RT_ASSIGN_OR_RETURN(bool renorm, GetBool(j, "renorm", false, ctx));
  if (renorm) return InvalidArgumentError(ctx + ": 'renorm' true (batch renormalization) is not supported; set it to false");
  // Only meaningful with renorm, and an implementation choice respectively.
  RT_RETURN_IF_ERROR(GetNumber(j, "renorm_momentum", 0.99, 0, false, 1, false, ctx).status());
  if (auto f = j.find("fused"); f != j.end() && !f->is_null() && !f->is_boolean()) {
    return InvalidArgumentError(ctx + ": 'fused' must be true, false or null, got " + BriefDump(*f));
  }
  return std::unique_ptr<Layer>(new BatchNorm(std::move(name), in, o, sync_class));
}

BatchNorm::BatchNorm(std::string name, const Shape& in, const Options& o, bool sync_class)
    : Layer(std::move(name), in, in), channels_(in.back()), o_(o), sync_class_(sync_class) {
  const size_t c = static_cast<size_t>(channels_);
  mean_.assign(c, 0.0f);
  invstd_.assign(c, 0.0f);
  a_.assign(c, 0.0f);
  b_.assign(c, 0.0f);
  acc_.assign(2 * c, 0.0);
  red_.assign(2 + 2 * c, 0.0f);
}

std::vector<ParamSpec> BatchNorm::ParamSpecs() const {
  // Keras' order: gamma, beta, moving_mean, moving_variance.
  std::vector<ParamSpec> specs;
  if (o_.scale) specs.push_back({"gamma", {channels_}, ParamSpec::Init::kOnes, 0, 0});
  if (o_.center) specs.push_back({"beta", {channels_}, ParamSpec::Init::kZeros, 0, 0});
  specs.push_back({"moving_mean", {channels_}, ParamSpec::Init::kZeros, 0, 0, /*trainable=*/false});
  specs.push_back({"moving_variance", {channels_}, ParamSpec::Init::kOnes, 0, 0, /*trainable=*/false});
  return specs;
}

void BatchNorm::BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) {
  size_t k = 0;
  if (o_.scale) {
    gamma_ = params[k];
    dgamma_ = grads[k++];
  }
  if (o_.center) {
    beta_ = params[k];
    dbeta_ = grads[k++];
  }
  moving_mean_ = params[k++];
  moving_var_ = params[k];
}

ops::Op BatchNorm::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kBatchNorm;
  op.training_mode = trainable();
  op.synchronized = o_.synchronized;
  op.epsilon = o_.epsilon;
  op.momentum = o_.momentum;
  op.center = o_.center;
  op.scale = o_.scale;
  return op;
}

void BatchNorm::ApplyReducedStats(const float* sums, int num_replicas) {
  if (num_replicas <= 0) return;
  const float n = static_cast<float>(num_replicas);
  const float keep = o_.momentum, take = 1.0f - o_.momentum;
  for (int c = 0; c < channels_; ++c) {
    moving_mean_[c] = moving_mean_[c] * keep + (sums[c] / n) * take;
    moving_var_[c] = moving_var_[c] * keep + (sums[channels_ + c] / n) * take;
  }
}

bool BatchNorm::Reduce(size_t n) {
  if (!o_.synchronized || !context().all_reduce_sum) return true;
  return context().all_reduce_sum(red_.data(), n);
}

void BatchNorm::Affine(const float* x, float* out) const {
  if (deferred_) return;  // AddOutputTo computes it inside the Add's pass
  kernels::ChannelAffine(x, rows_, channels_, a_.data(), b_.data(), nullptr, fused_relu_, out);
}

void BatchNorm::AddOutputTo(const float* other, bool relu, float* out) const {
  kernels::ChannelAffine(x_, rows_, channels_, a_.data(), b_.data(), other, relu, out);
}

const float* BatchNorm::Forward(const float* in, int batch, bool training) {
  const size_t c = static_cast<size_t>(channels_);
  rows_ = static_cast<size_t>(batch) * (static_cast<size_t>(input_size()) / c);
  float* out = deferred_ ? nullptr : EnsureSize(out_, rows_ * c);
  x_ = in;
  batch_stats_ = training && trainable();
  if (batch_stats_) {
    TrainForward(in, out);  // false: the collective failed; the output is left as it is
    return out;
  }
  // Inference (Keras' formula): x * a + (beta - mean * a), a = gamma / sqrt(var + eps).
  for (size_t k = 0; k < c; ++k) {
    mean_[k] = moving_mean_[k];
    invstd_[k] = 1.0f / std::sqrt(moving_var_[k] + o_.epsilon);
    a_[k] = o_.scale ? gamma_[k] * invstd_[k] : invstd_[k];
    b_[k] = (o_.center ? beta_[k] : 0.0f) - mean_[k] * a_[k];
  }
  Affine(in, out);
  return out;
}

bool BatchNorm::TrainForward(const float* x, float* out) {
  const size_t c = static_cast<size_t>(channels_);
  double* s = acc_.data();
  double* q = acc_.data() + c;
  kernels::ChannelSums(x, rows_, channels_, s, q);
  count_ = static_cast<double>(rows_);
  if (o_.synchronized && context().all_reduce_sum) {
    red_[0] = static_cast<float>(rows_ / static_cast<size_t>(kCountBase));
    red_[1] = static_cast<float>(rows_ % static_cast<size_t>(kCountBase));
    for (size_t k = 0; k < c; ++k) {
      red_[2 + k] = static_cast<float>(s[k]);
      red_[2 + c + k] = static_cast<float>(q[k]);
    }
    if (!Reduce(2 + 2 * c)) return false;
    count_ = static_cast<double>(red_[0]) * kCountBase + red_[1];
    for (size_t k = 0; k < c; ++k) {
      s[k] = red_[2 + k];
      q[k] = red_[2 + c + k];
    }
  }
  for (size_t k = 0; k < c; ++k) {
    const double mean = s[k] / count_;
    const float var = static_cast<float>(std::max(0.0, q[k] / count_ - mean * mean));  // biased, as Keras
    mean_[k] = static_cast<float>(mean);
    invstd_[k] = 1.0f / std::sqrt(var + o_.epsilon);
    a_[k] = o_.scale ? gamma_[k] * invstd_[k] : invstd_[k];
    b_[k] = (o_.center ? beta_[k] : 0.0f) - mean_[k] * a_[k];
    if (stats_ != nullptr) {
      stats_[k] = mean_[k];
      stats_[c + k] = var;
    }
  }
  Affine(x, out);
  return true;
}

const float* BatchNorm::Backward(const float* dy, bool need_din) {
  const size_t c = static_cast<size_t>(channels_);
  const bool grads = dgamma_ != nullptr || dbeta_ != nullptr;
  const float* y = fused_relu_ && !masked_ ? out_.data() : nullptr;  // the relu's gradient mask
  masked_ = false;
  // Where batch statistics made the output, the mask comes from x and the affine that made
  // it (a_, b_ until pass 2), saving both passes a read of the output.
  kernels::ReluOutput relu;
  if (y != nullptr && batch_stats_) {
    relu.a = a_.data();
    relu.b = b_.data();
  } else {
    relu.y = y;
  }
  if (!grads && !batch_stats_) {
    // Inference mode (a frozen layer): a per-channel scale, no statistics.
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, rows_ * c);
    kernels::ChannelScaleGrad(dy, y, rows_, channels_, a_.data(), din);
    return din;
  }
  // Pass 1: sum(dy) and sum(dy * x) per channel; sum(dy * xhat) = invstd * (sum(dy * x) - mean * sum(dy)).
  double* sdy = acc_.data();
  double* sdx = acc_.data() + c;
  kernels::ChannelGradSums(dy, relu, x_, rows_, channels_, sdy, sdx);
  for (size_t k = 0; k < c; ++k) {
    sdx[k] = static_cast<double>(invstd_[k]) * (sdx[k] - static_cast<double>(mean_[k]) * sdy[k]);
    if (dbeta_ != nullptr) dbeta_[k] = static_cast<float>(sdy[k]);
    if (dgamma_ != nullptr) dgamma_[k] = static_cast<float>(sdx[k]);
  }
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, rows_ * c);
  if (!batch_stats_) {
    kernels::ChannelScaleGrad(dy, y, rows_, channels_, a_.data(), din);
    return din;
  }
  if (o_.synchronized && context().all_reduce_sum) {
    for (size_t k = 0; k < c; ++k) {
      red_[k] = static_cast<float>(sdy[k]);
      red_[c + k] = static_cast<float>(sdx[k]);
    }
    if (!Reduce(2 * c)) return din;  // the collective failed: the trainer abandons the step
    for (size_t k = 0; k < c; ++k) {
      sdy[k] = red_[k];
      sdx[k] = red_[c + k];
    }
  }
  // Pass 2: dx = A * (dy - mean(dy)) + B * (x - mean), A = gamma * invstd,
  // B = -A * invstd * mean(dy * xhat). red_ (free again; >= 2c floats) holds mean(dy) and B.
  const float* coef_a = a_.data();  // gamma * invstd already
  float* mdy = red_.data();
  float* coef_b = red_.data() + c;
  for (size_t k = 0; k < c; ++k) {
    coef_b[k] = static_cast<float>(-static_cast<double>(coef_a[k]) * invstd_[k] * (sdx[k] / count_));
    mdy[k] = static_cast<float>(sdy[k] / count_);
  }
  kernels::ChannelInputGrad(dy, relu, x_, rows_, channels_, coef_a, mdy, coef_b, mean_.data(), din);
  return din;
}

}  // namespace ringtrain::nn
