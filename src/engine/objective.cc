#include "engine/objective.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

#include "common/json.h"

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

// Another metric's sums under another name ("digit_accuracy"); `inner` is owned by the
// output's objective, which the Objective keeps.
class RenamedMetric final : public nn::Metric {
 public:
  RenamedMetric(const nn::Metric* inner, std::string name) : inner_(inner), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  int num_sums() const override { return inner_->num_sums(); }
  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const override {
    inner_->Accumulate(outputs, labels, batch, sums);
  }
  double Result(const double* sums) const override { return inner_->Result(sums); }

 private:
  const nn::Metric* inner_;
  std::string name_;
};

// One output's loss times its weight as a metric ("digit_loss"), as Keras 3's CompileLoss
// records it: its examples' weighted loss sum and their count, over the output's gathered rows.
class OutputLossMetric final : public nn::Metric {
 public:
  OutputLossMetric(const Objective* output, double weight, std::string name)
      : output_(output), weight_(weight), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  int num_sums() const override { return 2; }
  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const override {
    sums[0] += weight_ * output_->LossSum(outputs, labels, batch, 0.0f, nullptr);
    sums[1] += batch;
  }
  double Result(const double* sums) const override { return sums[1] > 0 ? sums[0] / sums[1] : 0.0; }

 private:
  const Objective* output_;
  double weight_;
  std::string name_;
};

// Output k's entry of a per-output field: the list's k-th, or the object's by name
// (`fallback` when the object does not name it); anything else is the one for every output.
StatusOr<nlohmann::json> ForOutput(const nlohmann::json& field, const char* key, const std::vector<OutputLayout>& outs,
                                   size_t k, const nlohmann::json& fallback) {
  if (field.is_array()) {
    if (field.size() != outs.size()) {
      return InvalidArgumentError(std::string(key) + ": gives " + std::to_string(field.size()) +
                                  " entries but the model has " + std::to_string(outs.size()) +
                                  " outputs; give one per output, in the model's order, or an object by output name")
          .About(Subject::kConfig);
    }
    return field[k];
  }
  if (field.is_object()) {
    for (const auto& [name, v] : field.items()) {
      const bool known = std::any_of(outs.begin(), outs.end(), [&](const OutputLayout& o) { return o.name == name; });
      if (!known) {
        std::string names;
        for (const OutputLayout& o : outs) names += (names.empty() ? "\"" : ", \"") + o.name + "\"";
        return InvalidArgumentError(std::string(key) + ": names \"" + name + "\", which is not an output of the "
                                    "model (its outputs: " + names + ")")
            .About(Subject::kConfig);
      }
    }
    return field.contains(outs[k].name) ? field[outs[k].name] : fallback;
  }
  return field;
}

}  // namespace

StatusOr<Objective> Objective::ForOutputs(const nlohmann::json& loss, const nlohmann::json& loss_weights,
                                          const nlohmann::json& metrics, const std::vector<OutputLayout>& outputs) {
  Objective o;
  o.layouts_ = outputs;
  const bool metrics_per_output = nn::MetricsPerOutput(metrics);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const OutputLayout& out = outputs[k];
    const std::string ctx = "output \"" + out.name + "\"";
    RT_ASSIGN_OR_RETURN(nlohmann::json l, nn::LossPerOutput(loss) ? ForOutput(loss, "loss", outputs, k, nlohmann::json())
                                                          : StatusOr<nlohmann::json>(loss));
    if (l.is_null()) return InvalidArgumentError("loss: names no loss for " + ctx).About(Subject::kConfig);
    RT_ASSIGN_OR_RETURN(nlohmann::json m, metrics_per_output
                                              ? ForOutput(metrics, "metrics", outputs, k, nlohmann::json::array())
                                              : StatusOr<nlohmann::json>(metrics));
    if (m.is_null()) m = nlohmann::json::array();
    RT_ASSIGN_OR_RETURN(nlohmann::json w, ForOutput(loss_weights, "loss_weights", outputs, k, 1.0));
    if (w.is_null()) w = 1.0;
    if (!w.is_number() || !(w.get<double>() >= 0) || w.get<double>() > 1e30) {
      return InvalidArgumentError("loss_weights: the weight of " + ctx + " must be a number >= 0, got " + JsonBrief(w))
          .About(Subject::kConfig);
    }
    auto made = out.per_value ? FromJson(l, m, 1, out.size, out.float_targets)
                              : FromJson(l, m, out.num_classes, out.positions());
    if (!made.ok()) return Status(made.status().code(), ctx + ": " + made.status().message(), Subject::kConfig);
    Head head;
    head.objective = std::make_unique<Objective>(std::move(made).value());
    head.weight = w.get<double>();
    head.first_metric = o.metrics_.size();
    o.metrics_.push_back(std::make_unique<OutputLossMetric>(head.objective.get(), head.weight, out.name + "_loss"));
    o.argmax_.push_back(false);
    for (size_t i = 0; i < head.objective->metrics_.size(); ++i) {
      o.metrics_.push_back(
          std::make_unique<RenamedMetric>(head.objective->metrics_[i].get(), out.name + "_" + head.objective->metrics_[i]->name()));
      o.argmax_.push_back(head.objective->argmax_[i]);
    }
    o.heads_.push_back(std::move(head));
  }
  std::set<std::string> names;
  for (const auto& m : o.metrics_) {
    if (!names.insert(m->name()).second) {
      return InvalidArgumentError("metrics: two metrics are named \"" + m->name() + "\"; rename one").About(Subject::kConfig);
    }
  }
  // The first output's loss stands for the objective where one loss is asked for.
  o.loss_ = nn::Loss::Create(o.heads_[0].objective->loss().config()).value();
  o.positions_ = o.heads_[0].objective->positions();
  o.Index();
  return o;
}

size_t Objective::output_size() const {
  if (heads_.empty()) return positions_ * static_cast<size_t>(loss_->num_outputs());
  size_t n = 0;
  for (const OutputLayout& l : layouts_) n += l.size;
  return n;
}

size_t Objective::label_size() const {
  if (heads_.empty()) return positions_;
  size_t n = 0;
  for (const OutputLayout& l : layouts_) n += l.label_size();
  return n;
}

void Objective::Gather(size_t h, const float* outputs, const int32_t* labels, int batch) const {
  const OutputLayout& l = layouts_[h];
  const size_t row = output_size(), label_row = label_size(), n = static_cast<size_t>(batch);
  out_buf_.resize(n * l.size);
  label_buf_.resize(n * l.label_size());
  for (size_t b = 0; b < n; ++b) {
    std::memcpy(out_buf_.data() + b * l.size, outputs + b * row + l.offset, l.size * sizeof(float));
    std::memcpy(label_buf_.data() + b * l.label_size(), labels + b * label_row + l.label_offset,
                l.label_size() * sizeof(int32_t));
  }
}

StatusOr<Objective> Objective::FromJson(const nlohmann::json& loss, const nlohmann::json& metrics, int num_outputs,
                                        size_t positions, bool float_targets) {
  Objective o;
  o.positions_ = positions == 0 ? 1 : positions;
  auto l = nn::Loss::FromJson(loss, num_outputs);
  if (!l.ok()) return l.status().About(Subject::kConfig);
  if (float_targets) {
    nn::LossConfig config = (*l)->config();
    config.float_targets = true;
    l = nn::Loss::Create(config);
    if (!l.ok()) return l.status().About(Subject::kConfig);
  }
  o.loss_ = std::move(l).value();
  auto m = nn::MetricsFromJson(metrics, loss, num_outputs, float_targets);
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
  if (!heads_.empty()) {
    // The weighted sum of the outputs' losses, each output's gradient scaled by its weight,
    // in the outputs' order.
    double sum = 0;
    const size_t row = output_size(), n = static_cast<size_t>(batch);
    for (size_t h = 0; h < heads_.size(); ++h) {
      const OutputLayout& l = layouts_[h];
      Gather(h, outputs, labels, batch);
      const float scale = static_cast<float>(static_cast<double>(grad_scale) * heads_[h].weight);
      if (grad != nullptr) grad_buf_.resize(n * l.size);
      const double loss = heads_[h].objective->LossSum(out_buf_.data(), label_buf_.data(), batch, scale,
                                                       grad != nullptr ? grad_buf_.data() : nullptr);
      sum += heads_[h].weight * loss;
      if (grad == nullptr) continue;
      for (size_t b = 0; b < n; ++b) {
        std::memcpy(grad + b * row + l.offset, grad_buf_.data() + b * l.size, l.size * sizeof(float));
      }
    }
    return sum;
  }
  const int rows = static_cast<int>(static_cast<size_t>(batch) * positions_);
  return ExampleLossSum(loss_->Compute(outputs, labels, rows, RowGradScale(grad_scale), grad));
}

void Objective::Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const {
  if (!heads_.empty()) {
    for (size_t h = 0; h < heads_.size(); ++h) {
      Gather(h, outputs, labels, batch);
      const size_t first = heads_[h].first_metric;
      metrics_[first]->Accumulate(out_buf_.data(), label_buf_.data(), batch, sums + first_sum_[first]);
      // The output's own metrics, in its objective's order, at their sums here.
      if (!heads_[h].objective->metrics_.empty()) {
        heads_[h].objective->Accumulate(out_buf_.data(), label_buf_.data(), batch, sums + first_sum_[first + 1]);
      }
    }
    return;
  }
  const int rows = static_cast<int>(static_cast<size_t>(batch) * positions_);
  for (size_t m = 0; m < metrics_.size(); ++m) metrics_[m]->Accumulate(outputs, labels, rows, sums + first_sum_[m]);
}

std::vector<double> Objective::Results(const double* sums) const {
  std::vector<double> out;
  for (size_t m = 0; m < metrics_.size(); ++m) out.push_back(metrics_[m]->Result(sums + first_sum_[m]));
  return out;
}

bool Objective::softmax_cross_entropy_from_logits() const {
  if (!heads_.empty()) return false;
  const nn::LossConfig& c = loss_->config();
  if (!c.from_logits) return false;
  if (c.kind == nn::LossKind::kSparseCategoricalCrossentropy) return true;
  return c.kind == nn::LossKind::kCategoricalCrossentropy && c.label_smoothing == 0;
}

}  // namespace ringtrain::engine
