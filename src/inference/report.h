// What `ringtrain evaluate` and `ringtrain predict` print: text lines for people and
// JSON for programs. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "inference/evaluate.h"

namespace ringtrain::inference {

// "Evaluation - 2000 examples - loss: 0.0899 - accuracy: 0.9735\n": the trainer's line
// (one " - name: value" per metric).
std::string FormatEvaluation(const EvalResult& r);
// {"examples": 2000, "loss": 0.0899..., "accuracy": 0.9735, "data": "eval", "model": "m.safetensors"}
// with the loss and every metric (by its history key) at full double precision.
nlohmann::json EvaluationJson(const EvalResult& r, const std::string& data_split, const std::string& model_path);

// "17 class=3 probability=0.912345 label=3\n" (no " label=" when label is null); without
// a class (a regression loss) "17 outputs=[0.25, -1.5] label=3\n".
std::string FormatPrediction(size_t index, const Prediction& p, const int32_t* label);
// {"index": 17, "class": 3, "probability": 0.912..., "probabilities": [...], "label": 3}
// ("label" only when label is non-null); without a class {"index": 17, "outputs": [...]}.
nlohmann::json PredictionJson(size_t index, const Prediction& p, const int32_t* label);

}  // namespace ringtrain::inference
