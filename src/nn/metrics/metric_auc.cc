#include "nn/metrics/metric_auc.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

// Keras' divide_no_nan: 0 where the denominator is 0.
double DivNoNan(double a, double b) { return b == 0 ? 0.0 : a / b; }

class Auc : public Metric {
 public:
  explicit Auc(const AucOptions& o) : o_(o) {}

  std::string name() const override { return o_.name; }
  int num_sums() const override { return 4 * o_.num_thresholds; }

  void Accumulate(const float* outputs, const int32_t* labels, int batch, double* sums) const override {
    const int t = o_.num_thresholds;
    // Per-bucket positives and negatives, then the reversed cumulative sum: an example
    // in bucket b lies above thresholds 0..b (Keras' segment_sum + cumsum).
    std::vector<double> pos(t, 0.0), neg(t, 0.0);
    double total_pos = 0, total_neg = 0;
    for (int i = 0; i < batch; ++i) {
      const bool positive = labels[i] != 0;
      (positive ? total_pos : total_neg) += 1;
      float p = outputs[i];
      if (o_.from_logits) p = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(p))));
      if (std::isnan(p)) continue;  // Keras' int32 cast of NaN gives a segment id that is dropped
      p = std::min(std::max(p, 0.0f), 1.0f);
      const float scaled = p * static_cast<float>(t - 1);  // float32, as Keras
      const int bucket = std::max(static_cast<int>(std::ceil(scaled)) - 1, 0);
      (positive ? pos : neg)[bucket] += 1;
    }
    double tp = 0, fp = 0;
    for (int k = t - 1; k >= 0; --k) {
      tp += pos[k];
      fp += neg[k];
      sums[k] += tp;
      sums[t + k] += fp;
      sums[2 * t + k] += total_neg - fp;
      sums[3 * t + k] += total_pos - tp;
    }
  }

  double Result(const double* sums) const override {
    const int t = o_.num_thresholds;
    const double* tp = sums;
    const double* fp = sums + t;
    const double* tn = sums + 2 * t;
    const double* fn = sums + 3 * t;
    if (o_.pr_curve && o_.summation == AucOptions::Summation::kInterpolation) return InterpolatePr(tp, fp, fn);
    double area = 0;
    auto x = [&](int k) { return o_.pr_curve ? DivNoNan(tp[k], tp[k] + fn[k]) : DivNoNan(fp[k], fp[k] + tn[k]); };
    auto y = [&](int k) { return o_.pr_curve ? DivNoNan(tp[k], tp[k] + fp[k]) : DivNoNan(tp[k], tp[k] + fn[k]); };
    for (int k = 0; k + 1 < t; ++k) {
      double height = 0;
      switch (o_.summation) {
        case AucOptions::Summation::kInterpolation: height = (y(k) + y(k + 1)) / 2.0; break;
        case AucOptions::Summation::kMinoring: height = std::min(y(k), y(k + 1)); break;
        case AucOptions::Summation::kMajoring: height = std::max(y(k), y(k + 1)); break;
      }
      area += (x(k) - x(k + 1)) * height;
    }
    return area;
  }

 private:
  // Keras' AUC.interpolate_pr_auc (Davis & Goadrich 2006): between two thresholds the
  // true and false positives move linearly, precision follows.
  double InterpolatePr(const double* tp, const double* fp, const double* fn) const {
    double area = 0;
    for (int k = 0; k + 1 < o_.num_thresholds; ++k) {
      const double dtp = tp[k] - tp[k + 1];
      const double p0 = tp[k] + fp[k], p1 = tp[k + 1] + fp[k + 1];
      const double slope = DivNoNan(dtp, std::max(p0 - p1, 0.0));
      const double intercept = tp[k + 1] - slope * p1;
      const double ratio = (p0 > 0 && p1 > 0) ? DivNoNan(p0, std::max(p1, 0.0)) : 1.0;
      area += DivNoNan(slope * (dtp + intercept * std::log(ratio)), std::max(tp[k + 1] + fn[k + 1], 0.0));
    }
    return area;
  }

  AucOptions o_;
};

}  // namespace

std::unique_ptr<Metric> NewAuc(const AucOptions& options) { return std::make_unique<Auc>(options); }

StatusOr<AucOptions> AucOptionsFromJson(const nlohmann::json& args, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(args,
                                      {"type", "name", "num_thresholds", "curve", "summation_method", "from_logits",
                                       "thresholds", "multi_label", "num_labels", "label_weights", "dtype"},
                                      ctx));
  AucOptions o;
  if (auto n = args.find("name"); n != args.end() && !n->is_null()) {
    if (!n->is_string() || n->get<std::string>().empty()) {
      return InvalidArgumentError(ctx + ": 'name' must be a non-empty string, got " + BriefDump(*n));
    }
    o.name = n->get<std::string>();
  }
  // A bound keeps the sums (4 per threshold, all-reduced) small.
  RT_ASSIGN_OR_RETURN(o.num_thresholds, GetPositiveInt(args, "num_thresholds", 200, ctx, 100000));
  if (o.num_thresholds < 2) {
    return InvalidArgumentError(ctx + ": 'num_thresholds' must be > 1, got " + std::to_string(o.num_thresholds));
  }
  if (auto c = args.find("curve"); c != args.end()) {
    if (*c == "ROC" || *c == "roc") {
      o.pr_curve = false;
    } else if (*c == "PR" || *c == "pr") {
      o.pr_curve = true;
    } else {
      return InvalidArgumentError(ctx + ": 'curve' must be \"ROC\" or \"PR\", got " + BriefDump(*c));
    }
  }
  if (auto s = args.find("summation_method"); s != args.end()) {
    if (*s == "interpolation" || *s == "Interpolation") {
      o.summation = AucOptions::Summation::kInterpolation;
    } else if (*s == "minoring" || *s == "Minoring") {
      o.summation = AucOptions::Summation::kMinoring;
    } else if (*s == "majoring" || *s == "Majoring") {
      o.summation = AucOptions::Summation::kMajoring;
    } else {
      return InvalidArgumentError(ctx + ": 'summation_method' must be \"interpolation\", \"minoring\" or "
                                        "\"majoring\", got " + BriefDump(*s));
    }
  }
  RT_ASSIGN_OR_RETURN(o.from_logits, GetBool(args, "from_logits", false, ctx));
  for (const char* unsupported : {"thresholds", "num_labels", "label_weights"}) {
    if (auto u = args.find(unsupported); u != args.end() && !u->is_null()) {
      return InvalidArgumentError(ctx + ": '" + unsupported +
                                  "' is not supported (leave it out or null; use num_thresholds), got " +
                                  BriefDump(*u));
    }
  }
  if (auto m = args.find("multi_label"); m != args.end() && *m != false) {
    return InvalidArgumentError(ctx + ": 'multi_label' must be false (AUC is for one output), got " + BriefDump(*m));
  }
  if (auto d = args.find("dtype"); d != args.end() && !d->is_null() && *d != "float32") {
    return InvalidArgumentError(ctx + ": 'dtype' must be \"float32\" or null, got " + BriefDump(*d));
  }
  return o;
}

}  // namespace ringtrain::nn
