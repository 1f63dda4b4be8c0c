// Keras' AUC for a binary task (one output): confusion counts at num_thresholds
// thresholds evenly spaced over [0, 1] with the end points moved to -1e-7 and 1 + 1e-7,
// counted as Keras' evenly-spaced fast path does (an output p, clipped to [0, 1], lies
// above thresholds 0 .. max(ceil(p * (T - 1)) - 1, 0) in float32), and the area by
// Keras' summation methods: "interpolation" (Keras' default; for PR the Davis & Goadrich
// interpolation of interpolate_pr_auc), "minoring", "majoring".
//
// A label counts as positive when it is not 0 (Keras casts y_true to bool). With
// from_logits the outputs go through a sigmoid first. A NaN output lies above no
// threshold. Threading and errors as metrics.h.
#pragma once

#include <memory>
#include <string>

#include "nn/metrics/metrics.h"

namespace ringtrain::nn {

struct AucOptions {
  std::string name = "auc";
  int num_thresholds = 200;  // > 1
  bool pr_curve = false;     // "curve": "ROC" (false) or "PR"
  enum class Summation { kInterpolation, kMinoring, kMajoring } summation = Summation::kInterpolation;
  bool from_logits = false;
};

// Sums: true positives [T], false positives [T], true negatives [T], false negatives [T]
// at thresholds 0 .. T-1.
std::unique_ptr<Metric> NewAuc(const AucOptions& options);

// {"type": "auc", "num_thresholds": 200, "curve": "ROC", "summation_method":
// "interpolation", "from_logits": false, "name": "auc"}; ctx names the entry.
StatusOr<AucOptions> AucOptionsFromJson(const nlohmann::json& args, const std::string& ctx);

}  // namespace ringtrain::nn
