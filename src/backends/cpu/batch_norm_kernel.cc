// BatchNorm on the CPU, channels last: the statistics of each channel over the batch
// and every spatial position.
//   training (a training Forward of an op in training mode):
//     mean, var = batch moments (biased variance), xhat = (x - mean) / sqrt(var + eps)
//     out = gamma * xhat + beta;  dx = gamma / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat))
//   inference (training false, or the op in inference mode: a frozen layer): the moving
//     statistics.
// A training Forward writes the batch mean and variance per channel into the reduced
// statistics (args.grads + node.first_stat); after the all-reduce ApplyReducedStats
// updates the moving statistics from the replicas' mean:
// moving = moving * momentum + batch * (1 - momentum).
// synchronized: the batch moments span every replica's examples, through
// StepContext::all_reduce_sum (count, sum and sum of squares in Forward; sum(dy) and
// sum(dy * xhat) in Backward). A failed collective leaves the output as it is (the
// trainer abandons the step).
//
// Two passes over the data each way, channels innermost, through kernels/norm.h; sums
// in double. Fusions: a following relu (AbsorbRelu), and the Add it feeds
// (DeferToAdd: the affine pass runs inside the Add's, AddOutputTo).
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernel.h"
#include "kernels/norm.h"

namespace ringtrain::backends::cpu {
namespace {

// Row counts travel through the float all-reduce as two exact parts (each below 2^24
// after summing over replicas as long as the total stays below 2^36 rows).
constexpr float kCountBase = 4096.0f;

class BatchNormKernel final : public OneInputKernel {
 public:
  explicit BatchNormKernel(const ops::Node& node)
      : node_(node), channels_(node.input_shapes[0].back()), input_size_(InputSize(node)) {
    const ops::Op& op = node.op;
    o_.momentum = op.momentum;
    o_.epsilon = op.epsilon;
    o_.center = op.center;
    o_.scale = op.scale;
    o_.synchronized = op.synchronized;
    training_mode_ = op.training_mode;
    // Keras' weight order: gamma, beta, moving_mean, moving_variance.
    size_t k = 0;
    if (o_.scale) gamma_ = k++;
    if (o_.center) beta_ = k++;
    moving_mean_ = k++;
    moving_var_ = k;
    const size_t c = static_cast<size_t>(channels_);
    mean_.assign(c, 0.0f);
    invstd_.assign(c, 0.0f);
    a_.assign(c, 0.0f);
    b_.assign(c, 0.0f);
    acc_.assign(2 * c, 0.0);
    red_.assign(2 + 2 * c, 0.0f);
  }

  Status ApplyReducedStats(const KernelArgs& args, const float* sums, int num_replicas) override;

  bool AbsorbRelu() override {
    fused_relu_ = true;
    return true;
  }
  const float* ReluGradientMask() const override { return fused_relu_ ? out_.data() : nullptr; }
  void GradientMasked() override { masked_ = fused_relu_; }
  // A BatchNorm feeding an Add (ResNet's second of a block) leaves its affine pass to the
  // Add; its backward needs only its input.
  bool DeferToAdd() override {
    deferred_ = !fused_relu_;
    return deferred_;
  }
  void AddOutputTo(const float* other, bool relu, float* out) const override;

 protected:
  const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) override;
  const float* BackwardOne(const KernelArgs& args, const float* dy, bool need_din) override;

 private:
  struct Options {
    float momentum = 0.99f, epsilon = 0.001f;
    bool center = true, scale = true, synchronized = false;
  };
  static constexpr size_t kNone = static_cast<size_t>(-1);

  // The weights in the model's buffers; gamma and beta null when the op has none.
  const float* gamma(const KernelArgs& args) const { return gamma_ == kNone ? nullptr : Param(args, node_, gamma_); }
  const float* beta(const KernelArgs& args) const { return beta_ == kNone ? nullptr : Param(args, node_, beta_); }
  // The step's all-reduce when synchronized across several replicas; else null.
  static const std::function<bool(float* data, size_t n)>* AllReduce(const KernelArgs& args, bool synchronized) {
    if (!synchronized || args.step == nullptr || !args.step->all_reduce_sum) return nullptr;
    return &args.step->all_reduce_sum;
  }

  // out = x * a_[c] + b_[c] over rows_ rows.
  void Affine(const float* x, float* out) const;
  bool TrainForward(const KernelArgs& args, const float* x, float* out);
  // All-reduces n floats of red_ when synchronized across several replicas; true when
  // there is nothing to reduce.
  bool Reduce(const KernelArgs& args, size_t n);

  const ops::Node node_;
  const int channels_;
  const int64_t input_size_;
  Options o_;
  bool training_mode_ = true;  // false: inference mode in training too (a frozen layer)
  size_t gamma_ = kNone, beta_ = kNone, moving_mean_ = 0, moving_var_ = 0;  // indices into node_.params

  // The last Forward: its input (kept by the model for Backward), rows (batch x
  // positions), the examples counted in the statistics (all replicas' when synchronized)
  // and whether it used batch statistics.
  const float* x_ = nullptr;
  size_t rows_ = 0;
  double count_ = 0;
  bool batch_stats_ = false;
  bool fused_relu_ = false;  // a following relu taken over (AbsorbRelu)
  bool masked_ = false;      // the next Backward's output gradient is already masked (GradientMasked)
  bool deferred_ = false;    // the output is computed by the Add it feeds (DeferToAdd)
  std::vector<float> mean_, invstd_, a_, b_;  // per channel, of the last Forward
  std::vector<double> acc_;                   // per-channel sums
  std::vector<float> red_;                    // the all-reduce buffer (synchronized)
  std::vector<float> out_, din_;
};

Status BatchNormKernel::ApplyReducedStats(const KernelArgs& args, const float* sums, int num_replicas) {
  if (num_replicas <= 0) return Status::Ok();
  // The moving statistics are the model's (non-trainable) weights: this is the one call
  // that writes them.
  float* moving_mean = args.params + node_.params[moving_mean_].offset;
  float* moving_var = args.params + node_.params[moving_var_].offset;
  const float n = static_cast<float>(num_replicas);
  const float keep = o_.momentum, take = 1.0f - o_.momentum;
  for (int c = 0; c < channels_; ++c) {
    moving_mean[c] = moving_mean[c] * keep + (sums[c] / n) * take;
    moving_var[c] = moving_var[c] * keep + (sums[channels_ + c] / n) * take;
  }
  return Status::Ok();
}

bool BatchNormKernel::Reduce(const KernelArgs& args, size_t n) {
  const auto* all_reduce = AllReduce(args, o_.synchronized);
  if (all_reduce == nullptr) return true;
  return (*all_reduce)(red_.data(), n);
}

void BatchNormKernel::Affine(const float* x, float* out) const {
  if (deferred_) return;  // AddOutputTo computes it inside the Add's pass
  kernels::ChannelAffine(x, rows_, channels_, a_.data(), b_.data(), nullptr, fused_relu_, out);
}

void BatchNormKernel::AddOutputTo(const float* other, bool relu, float* out) const {
  kernels::ChannelAffine(x_, rows_, channels_, a_.data(), b_.data(), other, relu, out);
}

const float* BatchNormKernel::ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) {
  const size_t c = static_cast<size_t>(channels_);
  rows_ = static_cast<size_t>(batch) * (static_cast<size_t>(input_size_) / c);
  float* out = deferred_ ? nullptr : EnsureSize(out_, rows_ * c);
  x_ = in;
  batch_stats_ = training && training_mode_;
  if (batch_stats_) {
    TrainForward(args, in, out);  // false: the collective failed; the output is left as it is
    return out;
  }
  // Inference (Keras' formula): x * a + (beta - mean * a), a = gamma / sqrt(var + eps).
  const float* gamma = this->gamma(args);
  const float* beta = this->beta(args);
  const float* moving_mean = Param(args, node_, moving_mean_);
  const float* moving_var = Param(args, node_, moving_var_);
  for (size_t k = 0; k < c; ++k) {
    mean_[k] = moving_mean[k];
    invstd_[k] = 1.0f / std::sqrt(moving_var[k] + o_.epsilon);
    a_[k] = o_.scale ? gamma[k] * invstd_[k] : invstd_[k];
    b_[k] = (o_.center ? beta[k] : 0.0f) - mean_[k] * a_[k];
  }
  Affine(in, out);
  return out;
}

bool BatchNormKernel::TrainForward(const KernelArgs& args, const float* x, float* out) {
  const size_t c = static_cast<size_t>(channels_);
  double* s = acc_.data();
  double* q = acc_.data() + c;
  kernels::ChannelSums(x, rows_, channels_, s, q);
  count_ = static_cast<double>(rows_);
  if (AllReduce(args, o_.synchronized) != nullptr) {
    red_[0] = static_cast<float>(rows_ / static_cast<size_t>(kCountBase));
    red_[1] = static_cast<float>(rows_ % static_cast<size_t>(kCountBase));
    for (size_t k = 0; k < c; ++k) {
      red_[2 + k] = static_cast<float>(s[k]);
      red_[2 + c + k] = static_cast<float>(q[k]);
    }
    if (!Reduce(args, 2 + 2 * c)) return false;
    count_ = static_cast<double>(red_[0]) * kCountBase + red_[1];
    for (size_t k = 0; k < c; ++k) {
      s[k] = red_[2 + k];
      q[k] = red_[2 + c + k];
    }
  }
  const float* gamma = this->gamma(args);
  const float* beta = this->beta(args);
  // The reduced statistics, when the op has them (a frozen layer has none).
  float* stats = node_.num_stats > 0 ? args.grads + node_.first_stat : nullptr;
  for (size_t k = 0; k < c; ++k) {
    const double mean = s[k] / count_;
    const float var = static_cast<float>(std::max(0.0, q[k] / count_ - mean * mean));  // biased, as Keras
    mean_[k] = static_cast<float>(mean);
    invstd_[k] = 1.0f / std::sqrt(var + o_.epsilon);
    a_[k] = o_.scale ? gamma[k] * invstd_[k] : invstd_[k];
    b_[k] = (o_.center ? beta[k] : 0.0f) - mean_[k] * a_[k];
    if (stats != nullptr) {
      stats[k] = mean_[k];
      stats[c + k] = var;
    }
  }
  Affine(x, out);
  return true;
}

const float* BatchNormKernel::BackwardOne(const KernelArgs& args, const float* dy, bool need_din) {
  const size_t c = static_cast<size_t>(channels_);
  float* dgamma = gamma_ == kNone ? nullptr : Grad(args, node_, gamma_);  // null when frozen
  float* dbeta = beta_ == kNone ? nullptr : Grad(args, node_, beta_);
  const bool grads = dgamma != nullptr || dbeta != nullptr;
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
    if (dbeta != nullptr) dbeta[k] = static_cast<float>(sdy[k]);
    if (dgamma != nullptr) dgamma[k] = static_cast<float>(sdx[k]);
  }
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, rows_ * c);
  if (!batch_stats_) {
    kernels::ChannelScaleGrad(dy, y, rows_, channels_, a_.data(), din);
    return din;
  }
  if (AllReduce(args, o_.synchronized) != nullptr) {
    for (size_t k = 0; k < c; ++k) {
      red_[k] = static_cast<float>(sdy[k]);
      red_[c + k] = static_cast<float>(sdx[k]);
    }
    if (!Reduce(args, 2 * c)) return din;  // the collective failed: the trainer abandons the step
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

}  // namespace

std::unique_ptr<CpuKernel> NewBatchNormKernel(const ops::Node& node) {
  return std::make_unique<BatchNormKernel>(node);
}

}  // namespace ringtrain::backends::cpu
