#include "nn/metrics/metric_iou.h"

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

class MeanIou : public Metric {
 public:
  explicit MeanIou(const IouOptions& o) : o_(o) {}

  std::string name() const override { return o_.name; }
  int num_sums() const override { return o_.num_classes * o_.num_classes; }

  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const override {
    const int n = o_.num_classes;
    for (int i = 0; i < batch; ++i) {
      const int32_t truth = labels[i];
      if (truth < 0 || truth >= n || (o_.ignore_class && truth == *o_.ignore_class)) continue;
      const float* row = outputs + static_cast<size_t>(i) * n;
      int best = 0;
      for (int c = 1; c < n; ++c) {
        if (row[c] > row[best]) best = c;
      }
      sums[static_cast<size_t>(truth) * n + best] += 1;
    }
  }

  double Result(const double* sums) const override {
    const int n = o_.num_classes;
    double total = 0;
    int valid = 0;
    for (int c = 0; c < n; ++c) {
      double row = 0, column = 0;
      for (int k = 0; k < n; ++k) {
        row += sums[static_cast<size_t>(c) * n + k];
        column += sums[static_cast<size_t>(k) * n + c];
      }
      const double diag = sums[static_cast<size_t>(c) * n + c];
      const double denominator = row + column - diag;
      if (denominator == 0) continue;  // a class absent from labels and predictions
      total += diag / denominator;
      ++valid;
    }
    return valid == 0 ? 0.0 : total / valid;
  }

 private:
  IouOptions o_;
};

}  // namespace

std::unique_ptr<Metric> NewMeanIou(const IouOptions& options) { return std::make_unique<MeanIou>(options); }

StatusOr<IouOptions> IouOptionsFromJson(const nlohmann::json& args, int num_outputs, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(
      args, {"type", "name", "dtype", "num_classes", "ignore_class", "sparse_y_true", "sparse_y_pred", "axis"}, ctx));
  IouOptions o;
  if (auto n = args.find("name"); n != args.end() && !n->is_null()) {
    if (!n->is_string() || n->get<std::string>().empty()) {
      return InvalidArgumentError(ctx + ": 'name' must be a non-empty string, got " + BriefDump(*n));
    }
    o.name = n->get<std::string>();
  }
  if (!args.contains("num_classes")) {
    return InvalidArgumentError(ctx + ": 'num_classes' is required (as in Keras): the number of classes, " +
                                std::to_string(num_outputs) + " for this model");
  }
  RT_ASSIGN_OR_RETURN(o.num_classes, GetPositiveInt(args, "num_classes", 0, ctx));
  if (num_outputs < 2 || o.num_classes != num_outputs) {
    return InvalidArgumentError(ctx + ": 'num_classes' is " + std::to_string(o.num_classes) +
                                " but the model's output has " + std::to_string(num_outputs) +
                                " unit(s) on its last axis; MeanIoU takes the argmax of one score per class, so "
                                "they must be equal and at least 2");
  }
  if (auto g = args.find("ignore_class"); g != args.end() && !g->is_null()) {
    if (!g->is_number_integer()) {
      return InvalidArgumentError(ctx + ": 'ignore_class' must be a class index or null, got " + BriefDump(*g));
    }
    o.ignore_class = g->get<int>();
  }
  RT_ASSIGN_OR_RETURN(bool sparse_true, GetBool(args, "sparse_y_true", true, ctx));
  if (!sparse_true) {
    return InvalidArgumentError(ctx + ": 'sparse_y_true' must be true: labels are class indices here");
  }
  RT_ASSIGN_OR_RETURN(bool sparse_pred, GetBool(args, "sparse_y_pred", false, ctx));
  if (sparse_pred) {
    return InvalidArgumentError(ctx + ": 'sparse_y_pred' must be false: the model outputs one score per class and "
                                      "the prediction is their argmax (leave it out)");
  }
  if (auto a = args.find("axis"); a != args.end() && *a != -1) {
    return InvalidArgumentError(ctx + ": 'axis' must be -1 (the classes are the output's last axis), got " +
                                BriefDump(*a));
  }
  if (auto d = args.find("dtype"); d != args.end() && !d->is_null() && *d != "float32") {
    return InvalidArgumentError(ctx + ": 'dtype' must be \"float32\" or null, got " + BriefDump(*d));
  }
  return o;
}

}  // namespace ringtrain::nn
