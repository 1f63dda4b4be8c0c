#include "nn/losses/loss.h"

#include <cmath>
#include <limits>

#include "common/logging.h"
#include "nn/losses/loss_impl.h"

namespace ringtrain::nn {

// Per row, in double: with m = max(x), log softmax(x)_c = x_c - m - log(sum exp(x - m)),
// which cannot overflow and keeps the largest exponent at exactly 0.
LossStats SparseSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                                    float grad_scale, float* grad_logits) {
  LossStats stats;
  int bad_labels = 0;
  for (int i = 0; i < batch; ++i) {
    const float* x = logits + static_cast<size_t>(i) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (x[c] > x[best]) best = c;  // ties go to the first, like tf.argmax
    }
    const double m = x[best];
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(x[c]) - m);
    const double log_sum = std::log(sum);
    const int32_t label = labels[i];
    const bool valid = label >= 0 && label < classes;
    if (valid) {
      stats.loss_sum += log_sum - (static_cast<double>(x[label]) - m);
      if (best == label) ++stats.correct;
    } else {
      // The data pipeline should have rejected this; make it impossible to miss.
      stats.loss_sum = std::numeric_limits<double>::quiet_NaN();
      ++bad_labels;
    }
    if (grad_logits == nullptr) continue;
    float* g = grad_logits + static_cast<size_t>(i) * classes;
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(x[c]) - m - log_sum);
      g[c] = static_cast<float>((p - (c == label ? 1.0 : 0.0)) * grad_scale);
    }
  }
  if (bad_labels > 0) {
    RT_LOG(ERROR) << "SparseSoftmaxCrossEntropy: " << bad_labels << " label(s) outside [0, " << classes
                  << "); the loss is NaN. Check the dataset's labels against the model's output size.";
  }
  return stats;
}

}  // namespace ringtrain::nn

namespace ringtrain::nn {

Status CheckLabels(const int32_t* labels, int batch, int classes) {
  for (int i = 0; i < batch; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return InvalidArgumentError("label " + std::to_string(labels[i]) + " of example " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(classes) +
                                  "); the model's last layer must have one unit per class");
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn

namespace ringtrain::nn {

const char* Loss::name() const {
  switch (config_.kind) {
    case LossKind::kSparseCategoricalCrossentropy: return "sparse_categorical_crossentropy";
    case LossKind::kCategoricalCrossentropy: return "categorical_crossentropy";
    case LossKind::kBinaryCrossentropy: return "binary_crossentropy";
    case LossKind::kMeanSquaredError: return "mean_squared_error";
    case LossKind::kMeanAbsoluteError: return "mean_absolute_error";
  }
  return "unknown";
}

Status Loss::CheckLabels(const int32_t* labels, int batch) const {
  for (int i = 0; i < batch; ++i) {
    if (loss_internal::LabelValid(config_, labels[i])) continue;
    const std::string where = "label " + std::to_string(labels[i]) + " of example " + std::to_string(i);
    if (config_.kind == LossKind::kBinaryCrossentropy && config_.num_outputs == 1) {
      return InvalidArgumentError(where + " is not 0 or 1: binary_crossentropy with one output takes the labels 0 "
                                          "and 1; for more classes give the last layer one unit per class");
    }
    return InvalidArgumentError(where + " is outside [0, " + std::to_string(config_.num_outputs) + "): " + name() +
                                " over " + std::to_string(config_.num_outputs) +
                                " outputs takes class indices; the model's last layer must have one unit per class");
  }
  return Status::Ok();
}

bool LossPerOutput(const nlohmann::json& loss) {
  return loss.is_array() || (loss.is_object() && !loss.contains("type") && !loss.contains("class_name"));
}

void Loss::ReportBadLabels(int bad) const {
  RT_LOG(ERROR) << name() << ": " << bad << " label(s) that " << config_.num_outputs
                << " output(s) cannot take (Loss::CheckLabels); the loss is NaN. Check the dataset's labels "
                   "against the model's output size.";
}

StatusOr<std::unique_ptr<Loss>> Loss::Create(const LossConfig& c) {
  using namespace loss_internal;  // NOLINT: the factories' own namespace
  auto bad = [](const std::string& m) { return Status(InvalidArgumentError("loss: " + m)).About(Subject::kConfig); };
  if (c.num_outputs < 1) return bad("the model has no outputs");
  const bool over_classes =
      c.kind == LossKind::kSparseCategoricalCrossentropy || c.kind == LossKind::kCategoricalCrossentropy;
  if (over_classes && c.num_outputs < 2) {
    return bad(std::string(c.kind == LossKind::kCategoricalCrossentropy ? "categorical_crossentropy"
                                                                        : "sparse_categorical_crossentropy") +
               " needs the model's last layer to have one unit per class (at least 2), got 1 (a softmax over one "
               "unit is always 1): for two classes with one sigmoid output use \"binary_crossentropy\"");
  }
  if (!(c.label_smoothing >= 0 && c.label_smoothing <= 1)) {
    return bad("'label_smoothing' must be a number in [0, 1], got " + std::to_string(c.label_smoothing));
  }
  const bool smoothable = c.kind == LossKind::kCategoricalCrossentropy || c.kind == LossKind::kBinaryCrossentropy;
  if (c.label_smoothing != 0 && !smoothable) {
    return bad("'label_smoothing' applies to categorical_crossentropy and binary_crossentropy only");
  }
  const bool regression = c.kind == LossKind::kMeanSquaredError || c.kind == LossKind::kMeanAbsoluteError;
  if (c.from_logits && regression) return bad("'from_logits' applies to the cross-entropies only");
  if (c.float_targets && !regression && c.kind != LossKind::kBinaryCrossentropy) {
    return bad("float targets take an element-wise loss (mse, mae, binary_crossentropy), not the class loss " +
               std::string(c.kind == LossKind::kCategoricalCrossentropy ? "categorical_crossentropy"
                                                                        : "sparse_categorical_crossentropy") +
               "; give integer class labels, or change the loss");
  }
  switch (c.kind) {
    case LossKind::kSparseCategoricalCrossentropy: return NewSparseCategoricalCrossentropy(c);
    case LossKind::kCategoricalCrossentropy: return NewCategoricalCrossentropy(c);
    case LossKind::kBinaryCrossentropy: return NewBinaryCrossentropy(c);
    case LossKind::kMeanSquaredError: return NewMeanSquaredError(c);
    case LossKind::kMeanAbsoluteError: return NewMeanAbsoluteError(c);
  }
  return bad("unknown loss kind");
}

}  // namespace ringtrain::nn
