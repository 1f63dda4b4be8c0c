// Internal to the loss library: the concrete losses behind Loss::Create, and the
// label rules they share with Loss::CheckLabels. Not for other libraries.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>

#include "nn/losses/loss.h"

namespace ringtrain::nn::loss_internal {

// A float target's value from its label word (LossConfig::float_targets).
inline float FloatTarget(int32_t label) {
  float t;
  std::memcpy(&t, &label, sizeof(t));
  return t;
}

// Whether `label` is one this loss can take (loss.h's header comment).
inline bool LabelValid(const LossConfig& c, int32_t label) {
  const bool one_output = c.num_outputs == 1;
  if (c.float_targets) {
    const float t = FloatTarget(label);
    if (!one_output || !std::isfinite(t)) return false;
    return c.kind != LossKind::kBinaryCrossentropy || (t >= 0.0f && t <= 1.0f);
  }
  switch (c.kind) {
    case LossKind::kMeanSquaredError:
    case LossKind::kMeanAbsoluteError:
      return one_output || (label >= 0 && label < c.num_outputs);
    case LossKind::kBinaryCrossentropy:
      return one_output ? (label == 0 || label == 1) : (label >= 0 && label < c.num_outputs);
    default:
      return label >= 0 && label < c.num_outputs;
  }
}

// The target of output `o` for a valid `label` before label smoothing: the one-hot
// of the label, or with one output the label itself (a float target's value).
inline double Target(const LossConfig& c, int32_t label, int o, int num_outputs) {
  if (c.float_targets) return static_cast<double>(FloatTarget(label));
  if (num_outputs == 1) return static_cast<double>(label);
  return o == label ? 1.0 : 0.0;
}

// tf.clip_by_value(p, eps, 1 - eps) and whether its gradient passes (TF's Maximum and
// Minimum gradients pass at equality, so the bounds themselves pass).
inline double ClipProbability(double p, bool* passes) {
  *passes = p >= kProbabilityEpsilon && p <= kProbabilityOneMinusEpsilon;
  if (p < kProbabilityEpsilon) return kProbabilityEpsilon;
  if (p > kProbabilityOneMinusEpsilon) return kProbabilityOneMinusEpsilon;
  return p;
}

std::unique_ptr<Loss> NewSparseCategoricalCrossentropy(const LossConfig& config);
std::unique_ptr<Loss> NewCategoricalCrossentropy(const LossConfig& config);
std::unique_ptr<Loss> NewBinaryCrossentropy(const LossConfig& config);
std::unique_ptr<Loss> NewMeanSquaredError(const LossConfig& config);
std::unique_ptr<Loss> NewMeanAbsoluteError(const LossConfig& config);

}  // namespace ringtrain::nn::loss_internal
