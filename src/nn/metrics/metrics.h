// Metrics: the job's "metrics" list in Keras' names, as sums that add across batches
// and workers, and the value Keras' history reports.
//
// A metric is immutable once made: Accumulate and Result are const and may be called
// from any thread (each call on its own sums). Nothing blocks. MetricsFromJson returns
// INVALID_ARGUMENT about Subject::kConfig naming the entry and field.
//
// Labels are int32 class indices (loss.h): with one output a label is the target
// itself (0 or 1), with more it is the index of the one-hot target.
//
// Supported (Keras' string names, class names, or {"type": ..., <arguments>}, or
// Keras' {"class_name": ..., "config": {...}}):
//   "accuracy" / "acc": resolved as Keras' compile does from the shapes: one output ->
//     binary_accuracy (threshold 0.5, whatever the loss's from_logits: Keras does the
//     same, so a logit output should use {"type": "binary_accuracy", "threshold": 0});
//     else categorical_crossentropy -> categorical_accuracy, else
//     sparse_categorical_accuracy. The history key stays "accuracy" / "acc".
//   sparse_categorical_accuracy, categorical_accuracy: argmax (the first of equal
//     maxima, as tf.argmax) equals the label.
//   binary_accuracy {"threshold": 0.5}: (output > threshold) equals the target, per
//     output (with several outputs: the one-hot), averaged over outputs and examples.
//   top_k_categorical_accuracy, sparse_top_k_categorical_accuracy {"k": 5}:
//     tf.math.in_top_k: fewer than k outputs are strictly greater than the label's
//     (so ties straddling the k-th place count as in the top k); a non-finite output
//     in the row counts as a miss.
//   auc (metric_auc.h): one output only.
//   mean_iou / MeanIoU {"num_classes": N} (metric_iou.h): the argmax's confusion matrix
//     over every position; history key "mean_io_u".
// With a per-position output (a segmentation map) every metric counts positions:
// engine::Objective hands it batch * positions rows.
// "name" renames a metric (its history key); two metrics with one name are refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

class Metric {
 public:
  virtual ~Metric() = default;
  // Keras' history key: "accuracy", "auc", "top_k_categorical_accuracy", ...
  virtual std::string name() const = 0;
  // How many doubles Accumulate adds to; all start at 0.
  virtual int num_sums() const = 0;
  // Adds the batch's statistics (outputs [batch, num_outputs], labels [batch]) to
  // sums[0, num_sums()). Only adds, so sums may be summed across batches and workers
  // in any grouping; the counts are integers, exact in double up to 2^53.
  virtual void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const = 0;
  // The metric's value from accumulated sums (0 when nothing was accumulated).
  virtual double Result(const double* sums) const = 0;
};

// `metrics`: the job's "metrics" (a list, or null / absent for none); `loss`: the job's
// "loss" (for "accuracy"; its errors are returned as Loss::FromJson's); num_outputs:
// the model's last layer's units.
// Whether a job's "metrics" names metrics per model output: an object of lists by output
// name, or a list of lists (null entries for none); a flat list applies to every output.
bool MetricsPerOutput(const nlohmann::json& metrics);

// float_targets: the labels are float targets (nn::LossConfig::float_targets): only
// "accuracy" / binary_accuracy take them (Keras' equal(y_true, y_pred > threshold)).
StatusOr<std::vector<std::unique_ptr<Metric>>> MetricsFromJson(const nlohmann::json& metrics,
                                                               const nlohmann::json& loss, int num_outputs,
                                                               bool float_targets = false);

// The accuracies on their own (tests, the engine's defaults).
enum class AccuracyKind { kSparseCategorical, kCategorical, kBinary };
std::unique_ptr<Metric> NewAccuracy(AccuracyKind kind, std::string name, int num_outputs, double threshold = 0.5,
                                    bool float_targets = false);
std::unique_ptr<Metric> NewTopKAccuracy(std::string name, int num_outputs, int k);

}  // namespace ringtrain::nn
