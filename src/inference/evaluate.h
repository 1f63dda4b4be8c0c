// Keras' model.evaluate() and model.predict() on one process: a whole dataset, no
// sharding, no collectives.
//
// Determinism: batches run in index order and per-example results are summed in that
// order in double, so the same model, data and batch size give the same bits.
// Threading: one thread at a time per Model (Forward reuses the model's buffers).
// Blocking: compute only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/dataset.h"
#include "nn/model.h"

namespace ringtrain::inference {

struct EvalResult {
  int64_t examples = 0;
  double loss = 0;      // the loss's mean over the examples, plus the weights' regularization penalty (Keras)
  double accuracy = 0;  // the metric named "accuracy" or "acc" (0 without one)
  std::vector<std::pair<std::string, double>> metrics;  // every metric by its history key, in order
};

// Evaluates `model` on all of `data` in batches of `batch` (the last may be smaller)
// under the job's "loss" and "metrics" (config::JobConfig's fields: nn/losses/loss.h,
// nn/metrics/metrics.h). INVALID_ARGUMENT when batch < 1, the data is empty, its examples do
// not have the model's input size, the loss or metrics do not fit the model ("loss: ..."),
// or a label is one the loss cannot take (naming it).
StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch, const nlohmann::json& loss,
                                   const nlohmann::json& metrics);
// The same with sparse categorical cross-entropy from logits and ["accuracy"].
StatusOr<EvalResult> EvaluateModel(nn::Model* model, const data::Dataset& data, int batch);

struct Prediction {
  bool has_class = true;               // false under a regression loss (mean squared / absolute error)
  int predicted_class = 0;             // the most probable class, ties to the first
  double probability = 0;              // the probability of predicted_class
  std::vector<double> probabilities;   // over all classes, computed in double
  std::vector<float> outputs;          // the model's outputs as they are (Keras' model.predict)
};

// Runs `n` examples (images: n * model->input_size() floats) through the model in
// batches of `batch` (clamped to at least 1) and returns one Prediction per example,
// reading the outputs as the job's `loss` (config::JobConfig's field) says they are:
// logits (from_logits: softmax, or for binary cross-entropy the sigmoid), probabilities
// (a softmax or sigmoid output, used as they are), or values (mean squared / absolute
// error: no class). Binary cross-entropy on one output predicts class 1 when its
// probability exceeds 0.5, with probabilities [1 - p, p]; on several outputs (multi-label),
// the most probable output. INVALID_ARGUMENT when the loss does not fit the model.
StatusOr<std::vector<Prediction>> Predict(nn::Model* model, const float* images, size_t n, int batch,
                                          const nlohmann::json& loss);
// The same with outputs read as logits over classes (sparse categorical cross-entropy
// from logits, the loss of a job that names none).
std::vector<Prediction> Predict(nn::Model* model, const float* images, size_t n, int batch);

}  // namespace ringtrain::inference
