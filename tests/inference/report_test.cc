// The exact text and JSON that `ringtrain evaluate` and `ringtrain predict` print.
#include "inference/report.h"

#include <gtest/gtest.h>

namespace ringtrain::inference {
namespace {

TEST(ReportTest, EvaluationLineIsTheTrainersLine) {
  EvalResult r{2000, 0.08994, 0.97351, {{"accuracy", 0.97351}}};
  EXPECT_EQ(FormatEvaluation(r), "Evaluation - 2000 examples - loss: 0.0899 - accuracy: 0.9735\n");
  nlohmann::json j = EvaluationJson(r, "eval", "m.safetensors");
  EXPECT_EQ(j["examples"], 2000);
  EXPECT_EQ(j["loss"].get<double>(), 0.08994);
  EXPECT_EQ(j["accuracy"].get<double>(), 0.97351);
  EXPECT_EQ(j["data"], "eval");
  EXPECT_EQ(j["model"], "m.safetensors");
}

TEST(ReportTest, EveryMetricByItsHistoryKey) {
  EvalResult r{10, 0.5, 0, {{"binary_accuracy", 0.75}, {"auc", 0.8125}}};
  EXPECT_EQ(FormatEvaluation(r), "Evaluation - 10 examples - loss: 0.5000 - binary_accuracy: 0.7500 - auc: 0.8125\n");
  nlohmann::json j = EvaluationJson(r, "train", "m.safetensors");
  EXPECT_EQ(j["binary_accuracy"].get<double>(), 0.75);
  EXPECT_EQ(j["auc"].get<double>(), 0.8125);
  EXPECT_FALSE(j.contains("accuracy"));
}

TEST(ReportTest, PredictionLineAndJson) {
  Prediction p;
  p.predicted_class = 3;
  p.probabilities = {0.05, 0.0, 0.0377654, 0.9122346};
  p.probability = p.probabilities[3];
  const int32_t label = 2;
  EXPECT_EQ(FormatPrediction(17, p, &label), "17 class=3 probability=0.912235 label=2\n");
  EXPECT_EQ(FormatPrediction(17, p, nullptr), "17 class=3 probability=0.912235\n");
  nlohmann::json j = PredictionJson(17, p, &label);
  EXPECT_EQ(j["index"], 17);
  EXPECT_EQ(j["class"], 3);
  EXPECT_EQ(j["label"], 2);
  EXPECT_EQ(j["probability"].get<double>(), 0.9122346);
  EXPECT_EQ(j["probabilities"].get<std::vector<double>>(), p.probabilities);
  EXPECT_FALSE(PredictionJson(17, p, nullptr).contains("label"));
}

}  // namespace
}  // namespace ringtrain::inference
