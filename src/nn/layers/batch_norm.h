// BatchNormalization (Keras 3 and tf.keras 2), channels last: the statistics of each
// channel over the batch and every spatial position.
//   training (a training Forward of a trainable layer):
//     mean, var = batch moments (biased variance), xhat = (x - mean) / sqrt(var + eps)
//     out = gamma * xhat + beta;  dx = gamma / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat))
//   inference (training false, or the layer frozen, as Keras 2+): the moving statistics.
// Moving statistics: moving = moving * momentum + batch * (1 - momentum) (biased batch
// variance, as Keras). Keras keeps them per replica under MultiWorkerMirroredStrategy and
// reads their MEAN; the update is linear, so every replica writes its batch mean and
// variance into the reduced statistics (Layer::ReducedStatsSize) and, after the
// all-reduce, applies the replicas' mean: all replicas hold Keras' value.
// synchronized (Keras 3's argument; tf.keras 2's SyncBatchNormalization): the batch
// moments span every replica's examples, through StepContext::all_reduce_sum (count,
// sum and sum of squares in Forward; sum(dy) and sum(dy * xhat) in Backward). A failed
// collective leaves the output as it is (the trainer abandons the step).
//
// Two passes over the data each way, channels innermost, through kernels/norm.h; sums
// in double. A following relu can be fused in (Layer::AbsorbRelu). Threading: one
// thread at a time (layer.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class BatchNorm final : public Layer {
 public:
  // Keras' arguments: axis (-1 only), momentum (0.99), epsilon (0.001), center, scale,
  // synchronized (false), the four initializers (their defaults only), regularizers and
  // constraints (null only); tf.keras 2's renorm (false), virtual_batch_size,
  // adjustment (null), fused (any).
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);
  // tf.keras 2's SyncBatchNormalization: the same arguments, synchronized.
  static StatusOr<std::unique_ptr<Layer>> CreateSync(const nlohmann::json& j, std::string name, const Shape& in,
                                                     const std::string& ctx);

  const char* type() const override { return sync_class_ ? "sync_batch_normalization" : "batch_normalization"; }
  const char* class_name() const override { return sync_class_ ? "SyncBatchNormalization" : "BatchNormalization"; }
  std::vector<ParamSpec> ParamSpecs() const override;
  void BindParams(const std::vector<float*>& params, const std::vector<float*>& grads) override;
  // Batch mean and variance per channel, when the layer trains (a frozen one has none).
  size_t ReducedStatsSize() const override { return trainable() ? 2 * static_cast<size_t>(channels_) : 0; }
  void BindReducedStats(float* stats) override { stats_ = stats; }
  void ApplyReducedStats(const float* sums, int num_replicas) override;
  const float* Forward(const float* in, int batch, bool training) override;
  const float* Backward(const float* dout, bool need_din) override;
  ops::Op op() const override;
  bool AbsorbRelu() override {
    fused_relu_ = true;
    return true;
  }
  const float* ReluGradientMask() const override { return fused_relu_ ? out_.data() : nullptr; }
  void GradientMasked() override { masked_ = fused_relu_; }
  // A BatchNormalization feeding an Add (ResNet's second of a block) leaves its affine
  // pass to the Add (Layer::DeferToAdd); its backward needs only its input.
  bool DeferToAdd() override {
    deferred_ = !fused_relu_;
    return deferred_;
  }
  void AddOutputTo(const float* other, bool relu, float* out) const override;

 private:
  struct Options {
    float momentum = 0.99f, epsilon = 0.001f;
    bool center = true, scale = true, synchronized = false;
  };
  static StatusOr<std::unique_ptr<Layer>> CreateImpl(const nlohmann::json& j, std::string name, const Shape& in,
                                                     const std::string& ctx, bool sync_class);
  BatchNorm(std::string name, const Shape& in, const Options& o, bool sync_class);

  // out = x * a_[c] + b_[c] over rows_ rows.
  void Affine(const float* x, float* out) const;
  bool TrainForward(const float* x, float* out);
  // All-reduces n floats of red_ when synchronized across several replicas; true when
  // there is nothing to reduce.
  bool Reduce(size_t n);

  const int channels_;
  const Options o_;
  const bool sync_class_;
  float *gamma_ = nullptr, *beta_ = nullptr, *moving_mean_ = nullptr, *moving_var_ = nullptr;  // model's
  float *dgamma_ = nullptr, *dbeta_ = nullptr;  // null when frozen
  float* stats_ = nullptr;                      // the reduced statistics, null when frozen

  // The last Forward: its input (kept by the model for Backward), rows (batch x
  // positions), the examples counted in the statistics (all replicas' when synchronized)
  // and whether it used batch statistics.
  const float* x_ = nullptr;
  size_t rows_ = 0;
  double count_ = 0;
  bool batch_stats_ = false;
  bool fused_relu_ = false;  // a following relu taken over (Layer::AbsorbRelu)
  bool masked_ = false;      // the next Backward's output gradient is already masked (Layer::GradientMasked)
  bool deferred_ = false;    // the output is computed by the Add it feeds (Layer::DeferToAdd)
  std::vector<float> mean_, invstd_, a_, b_;  // per channel, of the last Forward
  std::vector<double> acc_;                   // per-channel sums
  std::vector<float> red_;                    // the all-reduce buffer (synchronized)
  std::vector<float> out_, din_;
};

}  // namespace ringtrain::nn
