// GpuObjective (backends/cuda/objective_kernels.h): the job's loss and metrics described
// for the GPU, and their kernels (objective_launch.h) enqueued per batch.
#include "backends/cuda/objective_kernels.h"

#include <sstream>
#include <utility>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/objective_launch.h"

namespace ringtrain::gpu {
namespace {

std::string Number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

Status CheckMetric(const om::MetricParams& m, int n, size_t index) {
  const std::string what = "GPU objective: metric " + std::to_string(index) + " (" + MetricName(m) + ")";
  if (m.n != n) {
    return InvalidArgumentError(what + " is over " + std::to_string(m.n) + " outputs, the loss over " +
                                std::to_string(n));
  }
  switch (m.form) {
    case om::MetricForm::kArgmaxAccuracy:
    case om::MetricForm::kBinaryAccuracy:
      return Status::Ok();
    case om::MetricForm::kTopK:
      return m.k >= 1 ? Status::Ok() : InvalidArgumentError(what + ": k must be at least 1");
    case om::MetricForm::kAuc:
      if (m.n != 1) return InvalidArgumentError(what + ": AUC takes one output");
      return m.num_thresholds >= 2 ? Status::Ok() : InvalidArgumentError(what + ": needs at least 2 thresholds");
  }
  return UnimplementedError(what + ": unknown metric form");
}

}  // namespace

StatusOr<om::LossParams> DescribeLoss(const nn::LossConfig& c) {
  om::LossFamily family;
  switch (c.kind) {
    case nn::LossKind::kSparseCategoricalCrossentropy: family = om::LossFamily::kSparseCategorical; break;
    case nn::LossKind::kCategoricalCrossentropy: family = om::LossFamily::kCategorical; break;
    case nn::LossKind::kBinaryCrossentropy: family = om::LossFamily::kBinary; break;
    case nn::LossKind::kMeanSquaredError: family = om::LossFamily::kSquared; break;
    case nn::LossKind::kMeanAbsoluteError: family = om::LossFamily::kAbsolute; break;
    default:
      return Status(UnimplementedError("loss: the GPU objective does not compute loss kind " +
                                       std::to_string(static_cast<int>(c.kind)) +
                                       "; set the job's \"device\" to \"cpu\""))
          .About(Subject::kConfig);
  }
  if (c.num_outputs < 1) return InvalidArgumentError("loss: the model has no outputs");
  return om::MakeLossParams(family, c.from_logits, c.label_smoothing, c.num_outputs);
}

StatusOr<om::MetricParams> DescribeMetric(const engine::Objective& objective, size_t m, int num_outputs) {
  const nn::Metric& metric = *objective.metrics().at(m);
  const om::AccumulateFn accumulate = [&metric](const float* outputs, const int32_t* labels, int batch,
                                                double* sums) { metric.Accumulate(outputs, labels, batch, sums); };
  om::MetricParams params;
  std::string why;
  if (!om::IdentifyMetric(accumulate, metric.num_sums(), num_outputs, objective.argmax_accuracy(m), &params, &why)) {
    return Status(UnimplementedError("metrics[" + std::to_string(m) + "]: the GPU objective does not compute '" +
                                     metric.name() + "' (" + why +
                                     "); remove it or set the job's \"device\" to \"cpu\""))
        .About(Subject::kConfig);
  }
  return params;
}

std::string LossName(const om::LossParams& loss) {
  std::string name;
  bool cross_entropy = true;
  switch (loss.family) {
    case om::LossFamily::kSparseCategorical: name = "sparse_categorical_crossentropy"; break;
    case om::LossFamily::kCategorical: name = "categorical_crossentropy"; break;
    case om::LossFamily::kBinary: name = "binary_crossentropy"; break;
    case om::LossFamily::kSquared: name = "mean_squared_error"; cross_entropy = false; break;
    case om::LossFamily::kAbsolute: name = "mean_absolute_error"; cross_entropy = false; break;
  }
  if (cross_entropy) {
    const bool logits = loss.form == om::LossForm::kSoftmax || loss.form == om::LossForm::kSoftmaxSmoothed ||
                        loss.form == om::LossForm::kBinaryLogits;
    name += logits ? " from logits" : " from probabilities";
  }
  if (loss.smoothing != 0) name += ", label_smoothing " + Number(loss.smoothing);
  return name;
}

std::string MetricName(const om::MetricParams& metric) {
  switch (metric.form) {
    case om::MetricForm::kArgmaxAccuracy: return "accuracy (argmax)";
    case om::MetricForm::kBinaryAccuracy: return "binary_accuracy (threshold " + Number(metric.threshold) + ")";
    case om::MetricForm::kTopK: return "top-" + std::to_string(metric.k) + " accuracy";
    case om::MetricForm::kAuc:
      return "auc (" + std::to_string(metric.num_thresholds) + " thresholds" +
             (metric.from_logits ? ", from logits)" : ")");
  }
  return "unknown metric";
}

GpuObjective::GpuObjective(const om::LossParams& loss, std::vector<om::MetricParams> metrics, const GpuContext* gpu)
    : loss_(loss), metrics_(std::move(metrics)), gpu_(gpu), id_(gpu->ordinal()) {
  for (const om::MetricParams& m : metrics_) {
    first_sum_.push_back(num_sums_);
    num_sums_ += om::MetricNumSums(m);
    has_auc_ = has_auc_ || m.form == om::MetricForm::kAuc;
  }
}

StatusOr<std::unique_ptr<GpuObjective>> GpuObjective::Create(const engine::Objective& objective, int num_outputs,
                                                              const GpuContext* gpu) {
  const nn::LossConfig& config = objective.loss().config();
  if (config.num_outputs != num_outputs) {
    return InvalidArgumentError("GPU objective: the loss is over " + std::to_string(config.num_outputs) +
                                " outputs, the model has " + std::to_string(num_outputs));
  }
  RT_ASSIGN_OR_RETURN(om::LossParams loss, DescribeLoss(config));
  std::vector<om::MetricParams> metrics;
  for (size_t m = 0; m < objective.metrics().size(); ++m) {
    RT_ASSIGN_OR_RETURN(om::MetricParams params, DescribeMetric(objective, m, num_outputs));
    metrics.push_back(params);
  }
  RT_ASSIGN_OR_RETURN(std::unique_ptr<GpuObjective> made, Create(loss, std::move(metrics), gpu));
  if (made->num_sums() != objective.num_sums()) {
    return InternalError("GPU objective: " + std::to_string(made->num_sums()) + " metric sums, the objective has " +
                         std::to_string(objective.num_sums()));
  }
  for (size_t m = 0; m < made->metrics_.size(); ++m) {
    if (made->first_sum_[m] != objective.first_sum(m)) {
      return InternalError("GPU objective: metric " + std::to_string(m) + "'s sums are laid out differently");
    }
  }
  return made;
}

StatusOr<std::unique_ptr<GpuObjective>> GpuObjective::Create(const om::LossParams& loss,
                                                              std::vector<om::MetricParams> metrics,
                                                              const GpuContext* gpu) {
  if (gpu == nullptr) return InvalidArgumentError("GPU objective: no GPU context");
  if (loss.n < 1) return InvalidArgumentError("GPU objective: the loss has no outputs");
  for (size_t m = 0; m < metrics.size(); ++m) RT_RETURN_IF_ERROR(CheckMetric(metrics[m], loss.n, m));
  RT_RETURN_IF_ERROR(gpu->MakeCurrent());
  std::unique_ptr<GpuObjective> o(new GpuObjective(loss, std::move(metrics), gpu));
  const size_t sums = 1 + static_cast<size_t>(o->num_sums_);
  RT_RETURN_IF_ERROR(o->sums_.Allocate(sums, "objective sums", o->id_));
  RT_RETURN_IF_ERROR(o->host_sums_.Allocate(sums, "pinned objective sums", o->id_));
  return o;
}

Status GpuObjective::Reserve(int batch) {
  if (batch <= capacity_) return Status::Ok();
  RT_RETURN_IF_ERROR(gpu_->MakeCurrent());
  RT_RETURN_IF_ERROR(gpu_->SyncCompute("GPU work before growing the objective's buffers"));
  const size_t n = static_cast<size_t>(batch);
  RT_RETURN_IF_ERROR(row_stats_.Grow(n, "loss row statistics", id_));
  RT_RETURN_IF_ERROR(values_.Grow(n, "per-example losses and scores", id_));
  if (has_auc_) RT_RETURN_IF_ERROR(codes_.Grow(n, "AUC buckets", id_));
  capacity_ = batch;
  return Status::Ok();
}

Status GpuObjective::Run(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) {
  if (batch < 0) return InvalidArgumentError("GPU objective: a batch of " + std::to_string(batch) + " examples");
  if (batch > 0 && (outputs == nullptr || labels == nullptr)) {
    return InvalidArgumentError("GPU objective: no outputs or labels");
  }
  RT_RETURN_IF_ERROR(Reserve(batch));
  cudaStream_t stream = gpu_->compute();
  double* sums = sums_.get();
  if (batch == 0) {
    // An empty batch: every sum is an empty sum.
    RT_RETURN_IF_ERROR(CudaCheck(cudaMemsetAsync(sums, 0, sums_.bytes(), stream), "cudaMemsetAsync(objective sums)",
                                 id_));
  } else {
    RT_RETURN_IF_ERROR(CudaCheck(
        ObjectiveLossRows(loss_, outputs, labels, batch, row_stats_.get(), values_.get(), stream),
        "ObjectiveLossRows", id_));
    if (grad != nullptr) {
      RT_RETURN_IF_ERROR(CudaCheck(
          ObjectiveLossGrads(loss_, outputs, labels, batch, row_stats_.get(), grad_scale, grad, stream),
          "ObjectiveLossGrads", id_));
    }
    RT_RETURN_IF_ERROR(
        CudaCheck(ObjectiveOrderedSum(values_.get(), batch, false, sums, stream), "ObjectiveOrderedSum(loss)", id_));
    // values_ and codes_ are reused metric after metric: the stream runs them in order.
    for (size_t m = 0; m < metrics_.size(); ++m) {
      const om::MetricParams& metric = metrics_[m];
      double* out = sums + 1 + first_sum_[m];
      if (metric.form == om::MetricForm::kAuc) {
        RT_RETURN_IF_ERROR(CudaCheck(ObjectiveAucCodes(metric, outputs, labels, batch, codes_.get(), stream),
                                     "ObjectiveAucCodes", id_));
        RT_RETURN_IF_ERROR(CudaCheck(ObjectiveAucSums(codes_.get(), batch, metric.num_thresholds, out, stream),
                                     "ObjectiveAucSums", id_));
      } else {
        RT_RETURN_IF_ERROR(CudaCheck(ObjectiveMetricScores(metric, outputs, labels, batch, values_.get(), stream),
                                     "ObjectiveMetricScores", id_));
        RT_RETURN_IF_ERROR(CudaCheck(ObjectiveOrderedSum(values_.get(), batch, true, out, stream),
                                     "ObjectiveOrderedSum(metric)", id_));
      }
    }
  }
  RT_RETURN_IF_ERROR(CudaCheck(
      cudaMemcpyAsync(host_sums_.get(), sums, sums_.bytes(), cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync(objective sums to the host)", id_));
  ran_ = true;
  return Status::Ok();
}

StatusOr<engine::BatchStats> GpuObjective::Collect() const {
  if (!ran_) return FailedPreconditionError("GPU objective: Collect before Run");
  const double* h = host_sums_.get();
  engine::BatchStats stats;
  stats.loss_sum = h[0];
  stats.metric_sums.assign(h + 1, h + 1 + num_sums_);
  return stats;
}

std::string GpuObjective::Describe() const {
  std::string s = LossName(loss_);
  for (size_t m = 0; m < metrics_.size(); ++m) s += (m == 0 ? "; " : ", ") + MetricName(metrics_[m]);
  return s;
}

}  // namespace ringtrain::gpu
