// A job's loss and metrics on the GPU: what engine::Objective computes per batch on the
// CPU (the loss sum, the gradient of the loss w.r.t. the model's outputs scaled by
// grad_scale, the metrics' sums), computed on the engine's compute stream into device
// memory this object owns, and copied into pinned host memory for Collect.
//
// What it computes (each as the CPU does, objective_math.h):
//   losses: every nn::LossKind (sparse / categorical / binary cross-entropy from logits
//     or probabilities, with label smoothing where the CPU takes it; mean squared and
//     mean absolute error), and the CPU's treatment of a label the loss cannot take
//     (the loss sum NaN, the row's gradient 0, or softmax * grad_scale for the sparse
//     softmax);
//   metrics: argmax accuracy (sparse_categorical_accuracy, categorical_accuracy),
//     binary_accuracy at any threshold, the top-k accuracies at any k, and AUC (any
//     num_thresholds, from logits or not; its counts are the CPU's exactly; the curve
//     and summation method only enter Objective::Results, on the host).
// Anything else (a loss kind or metric class added to the CPU later) is refused by
// Create with UNIMPLEMENTED naming it.
//
// Precision: per example in double where the CPU uses double, the batch sums in
// example order from 0 (the CPU's order); the losses and gradients agree with the CPU
// to rounding (CUDA's exp/log), the metric sums are the CPU's exactly.
//
// Threading: one thread at a time (the engine's), with the GPU's device current (the
// engine's methods make it current). Blocking: only Reserve, when it grows buffers,
// waits (bounded) for the compute stream. The owner waits for the compute stream
// before destroying the object (the engine's destructor drains it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/objective_math.h"
#include "common/status.h"
#include "engine/engine.h"
#include "engine/objective.h"

namespace ringtrain::gpu {

// Metric m of `objective` as the GPU computes it. nn::Metric shows its kind and
// arguments only through its sums, so they are recovered from its sums on crafted
// examples and then checked against its sums on test batches (om::IdentifyMetric).
// UNIMPLEMENTED (about the config) naming the metric when no form reproduces it.
StatusOr<om::MetricParams> DescribeMetric(const engine::Objective& objective, size_t m, int num_outputs);

// The loss of a configuration as the GPU computes it; UNIMPLEMENTED for a kind it lacks.
StatusOr<om::LossParams> DescribeLoss(const nn::LossConfig& config);

// "binary_crossentropy from logits, label_smoothing 0.1", "top-3 accuracy", ... (logs, errors).
std::string LossName(const om::LossParams& loss);
std::string MetricName(const om::MetricParams& metric);

class GpuObjective {
 public:
  // From the job's objective; num_outputs: the model's outputs per example (must be
  // the loss's). UNIMPLEMENTED naming a loss or metric the GPU does not compute.
  static StatusOr<std::unique_ptr<GpuObjective>> Create(const engine::Objective& objective, int num_outputs,
                                                        const GpuContext* gpu);
  // From descriptions (the metrics' sums laid out in order, as Objective lays them).
  static StatusOr<std::unique_ptr<GpuObjective>> Create(const om::LossParams& loss,
                                                        std::vector<om::MetricParams> metrics, const GpuContext* gpu);

  GpuObjective(const GpuObjective&) = delete;
  GpuObjective& operator=(const GpuObjective&) = delete;

  // Buffers for batches of up to `batch` examples. Growing them first waits (bounded)
  // for the compute stream, whose queued work may still use the old ones.
  Status Reserve(int batch);

  // Enqueues on the compute stream: the batch's loss sum, grad[batch, num_outputs] =
  // d(loss)/d(outputs) * grad_scale (when grad is not null), the metrics' sums, and the
  // copy of them into pinned host memory. outputs [batch, num_outputs] and labels
  // [batch] are device memory the stream may read until it has finished. A batch above
  // what Reserve made room for reserves first (and so waits). batch may be 0.
  Status Run(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad);

  // After the compute stream has finished the last Run (the caller waits): that batch's
  // loss sum and metric sums (num_sums() of them), as engine::BatchStats wants them
  // (the loss sum without the model's regularization penalty).
  StatusOr<engine::BatchStats> Collect() const;

  const om::LossParams& loss() const { return loss_; }
  const std::vector<om::MetricParams>& metrics() const { return metrics_; }
  int num_sums() const { return num_sums_; }
  // "sparse_categorical_crossentropy from logits; argmax accuracy, auc (200 thresholds)".
  std::string Describe() const;

 private:
  GpuObjective(const om::LossParams& loss, std::vector<om::MetricParams> metrics, const GpuContext* gpu);

  const om::LossParams loss_;
  const std::vector<om::MetricParams> metrics_;
  const GpuContext* gpu_;
  const int id_;
  std::vector<int> first_sum_;  // metric m's sums start at first_sum_[m]
  int num_sums_ = 0;
  bool has_auc_ = false;

  int capacity_ = 0;                   // examples the buffers below hold
  DeviceBuffer<om::RowStats> row_stats_;  // [capacity]
  DeviceBuffer<double> values_;        // [capacity]: the examples' losses, then each accuracy's scores
  DeviceBuffer<int32_t> codes_;        // [capacity] when a metric is an AUC
  DeviceBuffer<double> sums_;          // [1 + num_sums]: the loss sum, then the metrics' sums
  PinnedBuffer<double> host_sums_;     // the copy of sums_ that Collect reads
  bool ran_ = false;
};

}  // namespace ringtrain::gpu
