#include "inference/report.h"

#include <cstdio>

namespace ringtrain::inference {

std::string FormatEvaluation(const EvalResult& r) {
  char line[160];
  std::snprintf(line, sizeof(line), "Evaluation - %lld examples - loss: %.4f", static_cast<long long>(r.examples),
                r.loss);
  std::string s = line;
  for (const auto& [name, value] : r.metrics) {
    std::snprintf(line, sizeof(line), "%.4f", value);
    s += " - " + name + ": " + line;
  }
  return s + "\n";
}

nlohmann::json EvaluationJson(const EvalResult& r, const std::string& data_split, const std::string& model_path) {
  nlohmann::json j = {{"examples", r.examples}, {"loss", r.loss}, {"data", data_split}, {"model", model_path}};
  for (const auto& [name, value] : r.metrics) j[name] = value;
  return j;
}

std::string FormatPrediction(size_t index, const Prediction& p, const int32_t* label) {
  char line[160];
  std::snprintf(line, sizeof(line), "%zu class=%d probability=%.6f", index, p.predicted_class, p.probability);
  std::string s = line;
  if (label != nullptr) s += " label=" + std::to_string(*label);
  return s + "\n";
}

nlohmann::json PredictionJson(size_t index, const Prediction& p, const int32_t* label) {
  nlohmann::json j = {{"index", index}, {"class", p.predicted_class}, {"probability", p.probability},
                      {"probabilities", p.probabilities}};
  if (label != nullptr) j["label"] = *label;
  return j;
}

}  // namespace ringtrain::inference
