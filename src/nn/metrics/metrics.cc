#include "nn/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "nn/keras/json_fields.h"
#include "nn/losses/loss.h"
#include "nn/metrics/metric_auc.h"
#include "nn/metrics/metric_iou.h"

namespace ringtrain::nn {
namespace {

// tf.argmax: the first of equal maxima.
int ArgMax(const float* x, int n) {
  int best = 0;
  for (int c = 1; c < n; ++c) {
    if (x[c] > x[best]) best = c;
  }
  return best;
}

// Keras' MeanMetricWrapper: sums [per-example score, examples]; the result is their
// ratio. Subclasses score each example.
class MeanOverExamples : public Metric {
 public:
  MeanOverExamples(std::string name, int num_outputs) : name_(std::move(name)), n_(num_outputs) {}

  std::string name() const override { return name_; }
  int num_sums() const override { return 2; }

  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const override {
    for (int i = 0; i < batch; ++i) {
      sums[0] += Score(outputs + static_cast<size_t>(i) * n_, labels[i]);
      sums[1] += 1;
    }
  }

  double Result(const double* sums) const override { return sums[1] == 0 ? 0.0 : sums[0] / sums[1]; }

 protected:
  // One example's score in [0, 1]: x its n_ outputs, y its label.
  virtual double Score(const float* x, int32_t y) const = 0;
  const int n_;

 private:
  std::string name_;
};

// A 0/1 match per example (for several binary outputs, the mean over them).
class Accuracy : public MeanOverExamples {
 public:
  bool binary() const { return kind_ == AccuracyKind::kBinary; }
  double threshold() const { return threshold_; }
  Accuracy(AccuracyKind kind, std::string name, int num_outputs, double threshold, bool float_targets)
      : MeanOverExamples(std::move(name), num_outputs), kind_(kind), threshold_(threshold),
        float_targets_(float_targets) {}

 protected:
  double Score(const float* x, int32_t y) const override {
    if (kind_ != AccuracyKind::kBinary) {
      // Categorical accuracy compares with argmax(one_hot(label)), the label itself
      // for a label in range; a label out of range matches nothing.
      return (y >= 0 && y < n_ && ArgMax(x, n_) == y) ? 1.0 : 0.0;
    }
    int right = 0;
    for (int o = 0; o < n_; ++o) {
      double target = n_ == 1 ? static_cast<double>(y) : (o == y ? 1.0 : 0.0);
      if (float_targets_) {  // the label word holds the float target's bits
        float t;
        std::memcpy(&t, &y, sizeof(t));
        target = t;
      }
      const double predicted = x[o] > threshold_ ? 1.0 : 0.0;
      right += predicted == target ? 1 : 0;
    }
    return n_ == 1 ? right : static_cast<double>(right) / n_;
  }

 private:
  AccuracyKind kind_;
  double threshold_;
  bool float_targets_;
};

// tf.math.in_top_k: the label is in the top k when fewer than k outputs are strictly
// greater than its output; a label out of range or a non-finite output in the row is
// a miss.
class TopKAccuracy : public MeanOverExamples {
 public:
  TopKAccuracy(std::string name, int num_outputs, int k) : MeanOverExamples(std::move(name), num_outputs), k_(k) {}

 protected:
  double Score(const float* x, int32_t y) const override {
    bool hit = y >= 0 && y < n_ && std::isfinite(x[y]);
    int greater = 0;
    for (int c = 0; hit && c < n_; ++c) {
      if (!std::isfinite(x[c])) hit = false;
      if (x[c] > x[y]) ++greater;
    }
    return hit && greater < k_ ? 1.0 : 0.0;
  }

 private:
  int k_;
};

enum class MetricType { kAccuracy, kSparseCategorical, kCategorical, kBinary, kTopK, kSparseTopK, kAuc, kMeanIou };

struct MetricName {
  const char* name;
  MetricType type;
  const char* default_name;  // the history key; null: the name as written
};

constexpr MetricName kMetricNames[] = {
    {"accuracy", MetricType::kAccuracy, nullptr},
    {"acc", MetricType::kAccuracy, nullptr},
    {"sparse_categorical_accuracy", MetricType::kSparseCategorical, "sparse_categorical_accuracy"},
    {"SparseCategoricalAccuracy", MetricType::kSparseCategorical, "sparse_categorical_accuracy"},
    {"categorical_accuracy", MetricType::kCategorical, "categorical_accuracy"},
    {"CategoricalAccuracy", MetricType::kCategorical, "categorical_accuracy"},
    {"binary_accuracy", MetricType::kBinary, "binary_accuracy"},
    {"BinaryAccuracy", MetricType::kBinary, "binary_accuracy"},
    {"top_k_categorical_accuracy", MetricType::kTopK, "top_k_categorical_accuracy"},
    {"TopKCategoricalAccuracy", MetricType::kTopK, "top_k_categorical_accuracy"},
    {"sparse_top_k_categorical_accuracy", MetricType::kSparseTopK, "sparse_top_k_categorical_accuracy"},
    {"SparseTopKCategoricalAccuracy", MetricType::kSparseTopK, "sparse_top_k_categorical_accuracy"},
    {"auc", MetricType::kAuc, "auc"},
    {"AUC", MetricType::kAuc, "auc"},
    {"mean_iou", MetricType::kMeanIou, "mean_io_u"},
    {"MeanIoU", MetricType::kMeanIou, "mean_io_u"},
};

// A string, {"type": ...} or {"class_name": ..., "config": {...}} -> {"type": ...}.
StatusOr<nlohmann::json> Flatten(const nlohmann::json& entry, const std::string& ctx) {
  if (entry.is_string()) return nlohmann::json{{"type", entry}};
  if (!entry.is_object()) {
    return InvalidArgumentError(ctx + ": must be a metric name such as \"accuracy\" or an object {\"type\": ...}, "
                                      "got " + BriefDump(entry));
  }
  if (!entry.contains("class_name")) return entry;
  RT_RETURN_IF_ERROR(CheckKnownFields(entry, {"class_name", "config", "module", "registered_name"}, ctx));
  nlohmann::json args = nlohmann::json::object();
  if (auto config = entry.find("config"); config != entry.end() && !config->is_null()) {
    if (!config->is_object()) return InvalidArgumentError(ctx + ": 'config' must be an object");
    if (config->contains("type")) return InvalidArgumentError(ctx + ": 'config' has an unknown field 'type'");
    args = *config;
  }
  args["type"] = entry["class_name"];
  return args;
}

StatusOr<std::string> NameField(const nlohmann::json& args, const std::string& fallback, const std::string& ctx) {
  auto n = args.find("name");
  if (n == args.end() || n->is_null()) return fallback;
  if (!n->is_string() || n->get<std::string>().empty()) {
    return InvalidArgumentError(ctx + ": 'name' must be a non-empty string, got " + BriefDump(*n));
  }
  return n->get<std::string>();
}

Status CheckDtype(const nlohmann::json& args, const std::string& ctx) {
  if (auto d = args.find("dtype"); d != args.end() && !d->is_null() && *d != "float32") {
    return InvalidArgumentError(ctx + ": 'dtype' must be \"float32\" or null, got " + BriefDump(*d));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Metric>> OneMetric(const nlohmann::json& entry, const Loss& loss, int num_outputs,
                                            const std::string& ctx0) {
  RT_ASSIGN_OR_RETURN(nlohmann::json args, Flatten(entry, ctx0));
  auto type = args.find("type");
  const MetricName* found = nullptr;
  for (const MetricName& m : kMetricNames) {
    if (type != args.end() && *type == m.name) found = &m;
  }
  if (found == nullptr) {
    return InvalidArgumentError(
        ctx0 + ": unknown metric 'type' " + (type == args.end() ? std::string("(missing)") : BriefDump(*type)) +
        " (supported: accuracy, acc, sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, "
        "top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, auc, mean_iou, or Keras' class names)");
  }
  const std::string ctx = ctx0 + " (" + found->name + ")";
  RT_RETURN_IF_ERROR(CheckDtype(args, ctx));
  const std::string default_name = found->default_name != nullptr ? found->default_name : found->name;
  switch (found->type) {
    case MetricType::kAccuracy: {
      RT_RETURN_IF_ERROR(CheckKnownFields(args, {"type", "name", "dtype"}, ctx));
      RT_ASSIGN_OR_RETURN(std::string name, NameField(args, default_name, ctx));
      // Keras' compile: one output -> binary; one-hot targets (categorical
      // cross-entropy's label mode, or the one-hot of MSE/MAE/multi-label binary
      // cross-entropy) -> categorical; integer targets -> sparse.
      AccuracyKind kind = AccuracyKind::kCategorical;
      if (num_outputs == 1) {
        kind = AccuracyKind::kBinary;
      } else if (loss.kind() == LossKind::kSparseCategoricalCrossentropy) {
        kind = AccuracyKind::kSparseCategorical;
      }
      return NewAccuracy(kind, name, num_outputs);
    }
    case MetricType::kSparseCategorical:
    case MetricType::kCategorical: {
      RT_RETURN_IF_ERROR(CheckKnownFields(args, {"type", "name", "dtype"}, ctx));
      RT_ASSIGN_OR_RETURN(std::string name, NameField(args, default_name, ctx));
      return NewAccuracy(found->type == MetricType::kCategorical ? AccuracyKind::kCategorical
                                                                 : AccuracyKind::kSparseCategorical,
                         name, num_outputs);
    }
    case MetricType::kBinary: {
      RT_RETURN_IF_ERROR(CheckKnownFields(args, {"type", "name", "dtype", "threshold"}, ctx));
      RT_ASSIGN_OR_RETURN(std::string name, NameField(args, default_name, ctx));
      RT_ASSIGN_OR_RETURN(double threshold, GetNumber(args, "threshold", 0.5, -1e30, false, 1e30, false, ctx));
      return NewAccuracy(AccuracyKind::kBinary, name, num_outputs, threshold);
    }
    case MetricType::kTopK:
    case MetricType::kSparseTopK: {
      RT_RETURN_IF_ERROR(CheckKnownFields(args, {"type", "name", "dtype", "k"}, ctx));
      RT_ASSIGN_OR_RETURN(std::string name, NameField(args, default_name, ctx));
      RT_ASSIGN_OR_RETURN(int k, GetPositiveInt(args, "k", 5, ctx));
      return NewTopKAccuracy(name, num_outputs, k);
    }
    case MetricType::kAuc: {
      RT_ASSIGN_OR_RETURN(AucOptions o, AucOptionsFromJson(args, ctx));
      if (num_outputs != 1) {
        return InvalidArgumentError(ctx + ": AUC is for a binary task: the model's last layer must have one unit "
                                          "(a sigmoid, or a logit with \"from_logits\": true), it has " +
                                    std::to_string(num_outputs));
      }
      return NewAuc(o);
    }
    case MetricType::kMeanIou: {
      RT_ASSIGN_OR_RETURN(IouOptions o, IouOptionsFromJson(args, num_outputs, ctx));
      return NewMeanIou(o);
    }
  }
  return InvalidArgumentError(ctx + ": unsupported metric");
}

}  // namespace

std::unique_ptr<Metric> NewAccuracy(AccuracyKind kind, std::string name, int num_outputs, double threshold,
                                    bool float_targets) {
  return std::make_unique<Accuracy>(kind, std::move(name), num_outputs, threshold, float_targets);
}

bool MetricsPerOutput(const nlohmann::json& metrics) {
  return metrics.is_object() ||
         (metrics.is_array() && !metrics.empty() &&
          std::all_of(metrics.begin(), metrics.end(), [](const nlohmann::json& m) { return m.is_array() || m.is_null(); }));
}

std::unique_ptr<Metric> NewTopKAccuracy(std::string name, int num_outputs, int k) {
  return std::make_unique<TopKAccuracy>(std::move(name), num_outputs, k);
}

StatusOr<std::vector<std::unique_ptr<Metric>>> MetricsFromJson(const nlohmann::json& metrics,
                                                               const nlohmann::json& loss, int num_outputs,
                                                               bool float_targets) {
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Loss> parsed_loss, Loss::FromJson(loss, num_outputs));
  std::vector<std::unique_ptr<Metric>> out;
  if (metrics.is_null()) return out;
  if (!metrics.is_array()) {
    return Status(InvalidArgumentError("metrics: must be a list such as [\"accuracy\"], got " + BriefDump(metrics)))
        .About(Subject::kConfig);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string ctx = "metrics[" + std::to_string(i) + "]";
    auto m = OneMetric(metrics[i], *parsed_loss, num_outputs, ctx);
    if (!m.ok()) return m.status().About(Subject::kConfig);
    if (float_targets) {
      // Only the binary accuracy reads a float target; the others count class indices.
      auto* accuracy = dynamic_cast<const Accuracy*>(m->get());
      if (accuracy == nullptr || !accuracy->binary()) {
        return Status(InvalidArgumentError(ctx + " (" + (*m)->name() + "): counts class labels; with float targets "
                                           "use binary_accuracy (\"accuracy\" with one output per value) or no metric"))
            .About(Subject::kConfig);
      }
      *m = NewAccuracy(AccuracyKind::kBinary, (*m)->name(), num_outputs, accuracy->threshold(), true);
    }
    if (!names.insert((*m)->name()).second) {
      return Status(InvalidArgumentError(ctx + ": a second metric named \"" + (*m)->name() +
                                         "\" (the history key); give one a different \"name\""))
          .About(Subject::kConfig);
    }
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace ringtrain::nn
