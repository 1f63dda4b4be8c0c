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
// Its op is kBatchNorm (training or inference mode, synchronized, momentum, epsilon,
// center, scale); the CPU backend's kernel is backends/cpu/batch_norm_kernel.cc.
#pragma once

#include <cstddef>
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
  // Batch mean and variance per channel, when the layer trains (a frozen one has none).
  size_t ReducedStatsSize() const override { return trainable() ? 2 * static_cast<size_t>(channels_) : 0; }
  ops::Op op() const override;

 private:
  struct Options {
    float momentum = 0.99f, epsilon = 0.001f;
    bool center = true, scale = true, synchronized = false;
  };
  static StatusOr<std::unique_ptr<Layer>> CreateImpl(const nlohmann::json& j, std::string name, const Shape& in,
                                                     const std::string& ctx, bool sync_class);
  BatchNorm(std::string name, const Shape& in, const Options& o, bool sync_class);

  const int channels_;
  const Options o_;
  const bool sync_class_;
};

}  // namespace ringtrain::nn
