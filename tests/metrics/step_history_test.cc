// The page's history: downsampling keeps at most max_points means of consecutive steps.
#include "metrics/step_history.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace ringtrain::metrics {
namespace {

TEST(StepHistoryTest, EveryStepUntilFull) {
  StepHistory h(8);
  for (int s = 1; s <= 5; ++s) h.AddStep(s, 1.0 / s, 0.1 * s, 64, 0.5);
  auto j = nlohmann::json::parse(h.Json());
  ASSERT_EQ(j["points"].size(), 5u);
  EXPECT_EQ(j["steps_per_point"], 1);
  EXPECT_EQ(j["points"][1]["step"], 2);
  EXPECT_DOUBLE_EQ(j["points"][1]["loss"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["points"][4]["images_per_sec"].get<double>(), 128);
}

TEST(StepHistoryTest, DownsamplesToAtMostMaxPointsOfMeans) {
  StepHistory h(8);
  for (int s = 1; s <= 1000; ++s) h.AddStep(s, s, 0, 10, 1);
  EXPECT_LE(h.points(), 8u);
  auto j = nlohmann::json::parse(h.Json());
  const auto& p = j["points"];
  ASSERT_GE(p.size(), 4u);
  const int stride = j["steps_per_point"];
  EXPECT_GT(stride, 1);
  // Each full point is the mean of `stride` consecutive steps ending at its step.
  const int last = p[0]["step"];
  EXPECT_EQ(last, stride);
  EXPECT_DOUBLE_EQ(p[0]["loss"].get<double>(), (1.0 + stride) / 2);
  for (size_t i = 1; i < p.size(); ++i) EXPECT_GT(p[i]["step"].get<int>(), p[i - 1]["step"].get<int>());
  EXPECT_EQ(p[p.size() - 1]["step"], 1000);  // the newest step is always shown
}

TEST(StepHistoryTest, EpochsAndNullsForUnknowns) {
  StepHistory h;
  h.AddEpoch(1, 0.9, 0.6, 1200, false, 0, 0);
  h.AddEpoch(2, 0.7, 0.7, 1300, true, 0.8, 0.65);
  h.AddStep(1, std::nan(""), 0, 10, 0);  // a diverged loss, a zero-time step
  auto j = nlohmann::json::parse(h.Json());
  ASSERT_EQ(j["epochs"].size(), 2u);
  EXPECT_TRUE(j["epochs"][0]["val_loss"].is_null());
  EXPECT_DOUBLE_EQ(j["epochs"][1]["val_accuracy"].get<double>(), 0.65);
  EXPECT_TRUE(j["points"][0]["loss"].is_null());
  EXPECT_TRUE(j["points"][0]["images_per_sec"].is_null());
}

}  // namespace
}  // namespace ringtrain::metrics
