// Keras' regularization layers that perturb their input in training only (inference is
// the identity, the input passing through):
//   SpatialDropout2D  rate (required, in [0, 1)), seed (null): each example's channels
//                     are dropped whole (Keras' noise_shape (batch, 1, 1, channels)), the
//                     kept ones scaled by 1 / (1 - rate); needs a [height, width, channels]
//                     input. The draws are Dropout's (backends/cpu/augment_draws.h
//                     DropoutKeep) at index example * channels + channel.
//   GaussianNoise     stddev (required, >= 0; Keras 3 limits it to [0, 1], tf.keras 2 did
//                     not), seed (null): y = x + stddev * n, n a standard normal per element
//                     (backends/cpu/noise_draws.h: Box-Muller on SplitMix64 draws, the same
//                     bits on the CPU and the GPU). Its gradient is the identity.
// Both streams are pure functions of (the job's seed, the step, the replica, the layer's
// name, its seed), as Dropout's: not Keras' values bit for bit, Keras' distributions.
// Their ops are kSpatialDropout2D and kGaussianNoise; the CPU backend's kernels are
// backends/cpu/noise_kernels.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/layer.h"

namespace ringtrain::nn {

class SpatialDropout2D final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);
  const char* type() const override { return "spatial_dropout2d"; }
  const char* class_name() const override { return "SpatialDropout2D"; }
  ops::Op op() const override;

 private:
  SpatialDropout2D(std::string name, const Shape& in, double rate, uint64_t layer_seed);
  const float rate_, scale_;
  const uint64_t name_hash_, layer_seed_;
};

class GaussianNoise final : public Layer {
 public:
  static StatusOr<std::unique_ptr<Layer>> Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                 const std::string& ctx);
  const char* type() const override { return "gaussian_noise"; }
  const char* class_name() const override { return "GaussianNoise"; }
  ops::Op op() const override;

 private:
  GaussianNoise(std::string name, const Shape& in, double stddev, uint64_t layer_seed);
  const float stddev_;
  const uint64_t name_hash_, layer_seed_;
};

}  // namespace ringtrain::nn
