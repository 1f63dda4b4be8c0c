// Keras' MeanIoU: the confusion matrix of the true class against the predicted one
// (argmax over the output's last axis, the first of equal maxima as tf.argmax), summed
// over every position of every example, and the mean over the classes that occur (in
// the labels or the predictions) of diag / (row + column - diag).
//
// The outputs are always class scores here, so the prediction is their argmax: Keras'
// sparse_y_pred=False. Labels are class indices (sparse_y_true=True). A label equal to
// ignore_class is skipped; a label outside [0, num_classes) is skipped too (the loss
// reports it). Threading and errors as metrics.h.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "nn/metrics/metrics.h"

namespace ringtrain::nn {

struct IouOptions {
  std::string name = "mean_io_u";  // Keras' default for MeanIoU
  int num_classes = 0;             // >= 2, the model's units on the last axis
  std::optional<int> ignore_class;
};

// Sums: the num_classes x num_classes confusion matrix, row = true class.
std::unique_ptr<Metric> NewMeanIou(const IouOptions& options);

// {"type": "mean_iou", "num_classes": N, "ignore_class": null, "sparse_y_true": true,
// "sparse_y_pred": false, "axis": -1, "name": "mean_io_u"}; num_outputs: the model's
// units on the last axis, which num_classes must equal; ctx names the entry.
StatusOr<IouOptions> IouOptionsFromJson(const nlohmann::json& args, int num_outputs, const std::string& ctx);

}  // namespace ringtrain::nn
