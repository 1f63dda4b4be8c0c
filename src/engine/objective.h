// What an engine computes on each batch besides the forward and backward passes: the
// job's loss (nn/losses/loss.h: its per-example sum and the output gradient) and its metrics
// (nn/metrics/metrics.h: sums that add across batches and workers), built from the job's
// "loss" and "metrics" once the model's output size is known.
//
// Threading: immutable once built (Loss::Compute is called by one engine thread at a
// time; metrics are const). Nothing blocks. FromJson returns INVALID_ARGUMENT about
// Subject::kConfig, one line starting with the field ("loss: ..." / "metrics[1]: ...").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/losses/loss.h"
#include "nn/metrics/metrics.h"

namespace ringtrain::engine {

// One output of a model with several (nn::Model::outputs()), and the labels it reads.
struct OutputLayout {
  std::string name;         // the output layer's: history keys are "<name>_loss", "<name>_<metric>"
  size_t offset = 0;        // floats before it in the model's output row
  size_t size = 0;          // its floats per example
  int num_classes = 1;      // its last axis
  size_t label_offset = 0;  // labels before its own in an example's label row
  bool per_value = false;   // a target per output value, not a class index per position
  bool float_targets = false;  // those targets are floats (per_value only)
  size_t positions() const { return size / static_cast<size_t>(num_classes); }
  size_t label_size() const { return per_value ? size : positions(); }
};

class Objective {
 public:
  // `loss` / `metrics`: the job's fields as JobConfig holds them; num_outputs: the size
  // of the model output's last axis; positions: how many such rows an example's output
  // holds (1 for a vector, h * w for a segmentation map: nn::Model::output_positions).
  // An example then has `positions` labels, one per row, and the loss and the metrics
  // see batch * positions rows, as Keras reduces a loss over every axis but the last.
  // float_targets: the labels are float targets (nn::LossConfig::float_targets).
  static StatusOr<Objective> FromJson(const nlohmann::json& loss, const nlohmann::json& metrics, int num_outputs,
                                      size_t positions = 1, bool float_targets = false);
  // A model with several outputs, as Keras' compile takes them: `loss` one for every
  // output, a list in the outputs' order, or an object by output name; `loss_weights`
  // null (each 1), a list or an object (an output it does not name weighs 1); `metrics` a
  // list for every output, a list of lists, or an object of lists by output name. The loss
  // is the weighted sum of the outputs' losses. metrics() then holds, per output,
  // "<name>_loss" (its loss times its weight, as Keras 3 logs it) and "<name>_<metric>" for
  // each of its metrics.
  // INVALID_ARGUMENT about Subject::kConfig naming the output and field.
  static StatusOr<Objective> ForOutputs(const nlohmann::json& loss, const nlohmann::json& loss_weights,
                                        const nlohmann::json& metrics, const std::vector<OutputLayout>& outputs);

  // Sparse categorical cross-entropy from logits with "accuracy": what a job that names
  // neither trains with (and an engine uses until it is given another).
  static Objective Default(int num_outputs, size_t positions = 1);

  // The loss (with several outputs: the first output's).
  nn::Loss& loss() const { return *loss_; }
  size_t positions() const { return positions_; }
  // Several outputs (ForOutputs): the outputs, and an example's output and label row.
  bool several_outputs() const { return !heads_.empty(); }
  const std::vector<OutputLayout>& outputs() const { return layouts_; }
  size_t output_size() const;
  size_t label_size() const;
  // The batch's loss summed over its examples, each example's loss the mean over its
  // positions (Keras' sum_over_batch_size divides by batch * positions), and, when
  // `grad` is not null, d(that sum * grad_scale)/d(outputs) into grad[batch, positions,
  // num_outputs]. outputs as grad; labels [batch, positions]. With several outputs: the
  // weighted sum of theirs, over the rows of output_size() and label_size(). (An
  // Objective for several outputs gathers each output into buffers of its own: one
  // thread at a time.)
  double LossSum(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) const;
  // What LossSum does around the per-row loss, for an engine that computes the rows itself
  // (the GPU's): each row's gradient scale, and the examples' loss sum from the rows'.
  float RowGradScale(float grad_scale) const {
    return positions_ == 1 ? grad_scale : static_cast<float>(grad_scale / static_cast<double>(positions_));
  }
  double ExampleLossSum(double row_loss_sum) const {
    return positions_ == 1 ? row_loss_sum : row_loss_sum / static_cast<double>(positions_);
  }
  const std::vector<std::unique_ptr<nn::Metric>>& metrics() const { return metrics_; }
  // The metrics' sums side by side: metric m's are [first_sum(m), first_sum(m) + num_sums()).
  int num_sums() const { return num_sums_; }
  int first_sum(size_t m) const { return first_sum_[m]; }
  // Adds every metric's statistics of the batch (outputs [batch, positions, num_outputs],
  // labels [batch, positions]; with several outputs their rows) to sums[0, num_sums()).
  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const;
  // The metrics' values from accumulated sums, in order.
  std::vector<double> Results(const double* sums) const;

  // The softmax cross-entropy from logits (sparse, or categorical without label
  // smoothing: the same computation on class-index labels) that the GPU engine runs.
  bool softmax_cross_entropy_from_logits() const;
  // Whether metric m is an argmax accuracy (sparse_categorical_accuracy,
  // categorical_accuracy, or "accuracy" resolved to one), the one metric the GPU engine counts.
  bool argmax_accuracy(size_t m) const { return argmax_[m]; }

 private:
  Objective() = default;
  void Index();
  std::unique_ptr<nn::Loss> loss_;
  std::vector<std::unique_ptr<nn::Metric>> metrics_;
  std::vector<bool> argmax_;
  std::vector<int> first_sum_;
  int num_sums_ = 0;
  size_t positions_ = 1;

  // Several outputs: each one's own objective (one output's), its weight, and where its
  // loss and metrics sit in metrics_.
  struct Head {
    std::unique_ptr<Objective> objective;
    double weight = 1.0;
    size_t first_metric = 0;  // metrics_[first_metric] is "<name>_loss", then the output's metrics
  };
  std::vector<Head> heads_;
  std::vector<OutputLayout> layouts_;
  // One output's values and labels gathered from the rows, and its gradient.
  mutable std::vector<float> out_buf_, grad_buf_;
  mutable std::vector<int32_t> label_buf_;
  void Gather(size_t h, const float* outputs, const int32_t* labels, int batch) const;
};

}  // namespace ringtrain::engine
