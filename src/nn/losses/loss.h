// Losses: the job's "loss" object (Keras' names, arguments and defaults) and the
// per-batch loss sum and output gradient the trainer needs.
//
// Threading: a Loss is used by one thread at a time (the engine's); distinct Loss
// objects are independent. Nothing here blocks. FromJson returns INVALID_ARGUMENT
// about Subject::kConfig naming the field; Compute never fails (a label outside what
// CheckLabels accepts makes the sum NaN and logs one error line).
//
// Labels are int32 class indices throughout the data path. What a label means depends
// on the loss and the number of model outputs (the last layer's units):
//   sparse / categorical cross-entropy (outputs >= 2): the one-hot of the label;
//   mean squared / absolute error: the one-hot of the label with outputs >= 2, the
//     label as a number ((float)label) with one output;
//   binary cross-entropy: with one output the label itself (0 or 1, checked); with
//     outputs >= 2 a multi-label target, the one-hot of the label.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

struct LossStats {
  double loss_sum = 0;  // sum over the batch of -log softmax(logits)[label]
  int64_t correct = 0;  // examples whose argmax equals the label
};

// Computes the batch's loss statistics and writes
//   grad_logits[i, c] = (softmax(logits_i)[c] - [c == label_i]) * grad_scale.
// With grad_scale = 1 / global_batch, summing the gradients of all workers gives the
// gradient of the mean loss over the global batch (the custom-training-loop seed's
// scaling). grad_logits may be null (evaluation).
// Labels must lie in [0, classes) (see CheckLabels); an example whose label is
// outside makes loss_sum NaN, and the call logs an error.
LossStats SparseSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                                    float grad_scale, float* grad_logits);

// INVALID_ARGUMENT naming the first label outside [0, classes), else OK.
Status CheckLabels(const int32_t* labels, int batch, int classes);

enum class LossKind {
  kSparseCategoricalCrossentropy,
  kCategoricalCrossentropy,
  kBinaryCrossentropy,
  kMeanSquaredError,
  kMeanAbsoluteError,
};

// Keras' backend.epsilon() as the float32 clip bounds Keras' cross-entropies from
// probabilities use: clip(p, 1e-7, 1 - 1e-7), both rounded to float32.
inline constexpr float kProbabilityEpsilon = 1e-7f;
inline constexpr float kProbabilityOneMinusEpsilon = static_cast<float>(1.0 - 1e-7);

struct LossConfig {
  LossKind kind = LossKind::kSparseCategoricalCrossentropy;
  bool from_logits = false;      // Keras' default: the outputs are probabilities
  double label_smoothing = 0;    // categorical and binary cross-entropy only
  int num_outputs = 0;           // the model's last layer's units
  // The labels are float targets, one per output value, passed as their float32 bits in
  // the int32 label words (data/source.h): MSE, MAE and binary cross-entropy (soft
  // targets in [0, 1]) with one output per row only.
  bool float_targets = false;
};

// Whether a job's "loss" names a loss per model output: a list of them, or an object keyed
// by output names (not one loss's {"type"/"class_name": ...}).
bool LossPerOutput(const nlohmann::json& loss);

class Loss {
 public:
  virtual ~Loss() = default;

  // `loss` is the job's "loss": a string ("mse"), {"type": ..., <arguments>} or
  // Keras' serialized form {"class_name": "BinaryCrossentropy", "config": {...}}.
  // Types: sparse_categorical_crossentropy, categorical_crossentropy,
  // binary_crossentropy, mean_squared_error (mse), mean_absolute_error (mae), and
  // Keras' class names. Arguments: from_logits (false), label_smoothing (0; the
  // categorical and binary cross-entropies only), axis (-1 only), reduction
  // ("sum_over_batch_size" only), name. Cross-entropies over classes need
  // num_outputs >= 2.
  static StatusOr<std::unique_ptr<Loss>> FromJson(const nlohmann::json& loss, int num_outputs);
  // The same, from a parsed configuration (tests, the engine's defaults).
  static StatusOr<std::unique_ptr<Loss>> Create(const LossConfig& config);

  const LossConfig& config() const { return config_; }
  LossKind kind() const { return config_.kind; }
  int num_outputs() const { return config_.num_outputs; }
  // Keras' function name: "sparse_categorical_crossentropy", "mean_squared_error", ...
  const char* name() const;

  // INVALID_ARGUMENT naming the first label this loss cannot take (see the header
  // comment), else OK. Call it on data before training on it.
  Status CheckLabels(const int32_t* labels, int batch) const;

  // outputs [batch, num_outputs] (the model's last layer), labels [batch]. Returns
  // the sum over the batch of Keras' per-example loss (for MSE, MAE and binary
  // cross-entropy the mean over the outputs, as Keras' loss functions reduce the last
  // axis) and writes d(loss_i)/d(outputs_i) * grad_scale into grad[batch,
  // num_outputs] (may be null). Deterministic: the same inputs give the same bits.
  // Allocates nothing.
  virtual double Compute(const float* outputs, const int32_t* labels, int batch, float grad_scale,
                         float* grad) = 0;

 protected:
  explicit Loss(const LossConfig& config) : config_(config) {}
  // Logs the one error line for `bad` labels that CheckLabels would refuse.
  void ReportBadLabels(int bad) const;

 private:
  LossConfig config_;
};

}  // namespace ringtrain::nn
