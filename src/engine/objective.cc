#include "engine/objective.h"

#include <utility>

namespace ringtrain::engine {
namespace {

// The metric's type as written: "accuracy", {"type": ...} or {"class_name": ...}.
std::string MetricType(const nlohmann::json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (!entry.is_object()) return "";
  for (const char* key : {"class_name", "type"}) {
    auto it = entry.find(key);
    if (it != entry.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

bool IsArgmaxAccuracy(const nlohmann::json& entry, int num_outputs) {
  const std::string t = MetricType(entry);
  if (t == "accuracy" || t == "acc") return num_outputs >= 2;  // else binary_accuracy
  return t == "sparse_categorical_accuracy" || t == "SparseCategoricalAccuracy" || t == "categorical_accuracy" ||
         t == "CategoricalAccuracy";
}

}  // namespace

StatusOr<Objective> Objective::FromJson(const nlohmann::json& loss, const nlohmann::json& metrics, int num_outputs,
                                        size_t positions) {
  Objective o;
  o.positions_ = positions == 0 ? 1 : positions;
  auto l = nn::Loss::FromJson(loss, num_outputs);
  if (!l.ok()) return l.status().About(Subject::kConfig);
  o.loss_ = std::move(l).value();
  auto m = nn::MetricsFromJson(metrics, loss, num_outputs);
  if (!m.ok()) return m.status().About(Subject::kConfig);
  o.metrics_ = std::move(m).value();
  if (metrics.is_array()) {
    for (size_t i = 0; i < metrics.size(); ++i) o.argmax_.push_back(IsArgmaxAccuracy(metrics[i], num_outputs));
  }
  o.argmax_.resize(o.metrics_.size(), false);
  o.Index();
  return o;
}

Objective Objective::Default(int num_outputs, size_t positions) {
  Objective o;
  o.positions_ = positions == 0 ? 1 : positions;
  nn::LossConfig config;
  config.kind = nn::LossKind::kSparseCategoricalCrossentropy;
  config.from_logits = true;
  config.num_outputs = num_outputs;
  auto l = nn::Loss::Create(config);
  // Sparse cross-entropy needs 2 outputs; a smaller model gets MSE (a model that small
  // cannot have a job that names no loss: JobConfig and the trainer check it).
  if (!l.ok()) {
    config.kind = nn::LossKind::kMeanSquaredError;
    config.from_logits = false;
    l = nn::Loss::Create(config);
  }
  o.loss_ = std::move(l).value();
  o.metrics_.push_back(nn::NewAccuracy(num_outputs >= 2 ? nn::AccuracyKind::kSparseCategorical
                                                        : nn::AccuracyKind::kBinary,
                                       "accuracy", num_outputs));
  o.argmax_.push_back(num_outputs >= 2);
  o.Index();
  return o;
}

void Objective::Index() {
  first_sum_.clear();
  num_sums_ = 0;
  for (const auto& m : metrics_) {
    first_sum_.push_back(num_sums_);
    num_sums_ += m->num_sums();
  }
}

double Objective::LossSum(const float* outputs, const int32_t* labels, int batch, float grad_scale, float* grad) const {
  const int rows = static_cast<int>(static_cast<size_t>(batch) * positions_);
  return ExampleLossSum(loss_->Compute(outputs, labels, rows, RowGradScale(grad_scale), grad));
}

void Objective::Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const {
  const int rows = static_cast<int>(static_cast<size_t>(batch) * positions_);
  for (size_t m = 0; m < metrics_.size(); ++m) metrics_[m]->Accumulate(outputs, labels, rows, sums + first_sum_[m]);
}

std::vector<double> Objective::Results(const double* sums) const {
  std::vector<double> out;
  for (size_t m = 0; m < metrics_.size(); ++m) out.push_back(metrics_[m]->Result(sums + first_sum_[m]));
  return out;
}

bool Objective::softmax_cross_entropy_from_logits() const {
  const nn::LossConfig& c = loss_->config();
  if (!c.from_logits) return false;
  if (c.kind == nn::LossKind::kSparseCategoricalCrossentropy) return true;
  return c.kind == nn::LossKind::kCategoricalCrossentropy && c.label_smoothing == 0;
}

}  // namespace ringtrain::engine
