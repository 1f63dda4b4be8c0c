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
  std::string s;
  if (p.has_class) {
    std::snprintf(line, sizeof(line), "%zu class=%d probability=%.6f", index, p.predicted_class, p.probability);
    s = line;
  } else {
    s = std::to_string(index) + " outputs=[";
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      std::snprintf(line, sizeof(line), "%s%.6g", i ? ", " : "", static_cast<double>(p.outputs[i]));
      s += line;
    }
    s += "]";
  }
  if (label != nullptr) s += " label=" + std::to_string(*label);
  return s + "\n";
}

nlohmann::json PredictionJson(size_t index, const Prediction& p, const int32_t* label) {
  nlohmann::json j = {{"index", index}};
  if (p.has_class) {
    j["class"] = p.predicted_class;
    j["probability"] = p.probability;
    j["probabilities"] = p.probabilities;
  } else {
    j["outputs"] = p.outputs;
  }
  if (label != nullptr) j["label"] = *label;
  return j;
}

}  // namespace ringtrain::inference
