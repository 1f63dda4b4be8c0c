#include "nn/schedules/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace ringtrain::nn {
namespace {

std::unique_ptr<LrSchedule> Make(const char* text) {
  auto s = LrSchedule::FromJson(nlohmann::json::parse(text));
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The seed tutorial's LearningRateScheduler(decay): epoch < 3 -> 1e-3, epoch < 7 -> 1e-4, else 1e-5.
TEST(LrScheduleTest, SeedDecayTableByEpoch) {
  auto s = Make(R"({"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 7],
                    "values": [1e-3, 1e-4, 1e-5]})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kEpoch);
  const double expected[13] = {1e-3, 1e-3, 1e-3, 1e-4, 1e-4, 1e-4, 1e-4, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 1e-5};
  for (int epoch = 0; epoch <= 12; ++epoch) {
    // The step count does not matter for an epoch-unit schedule.
    EXPECT_EQ(s->LearningRate(epoch, 0), expected[epoch]) << "epoch " << epoch;
    EXPECT_EQ(s->LearningRate(epoch, 70 * epoch + 69), expected[epoch]) << "epoch " << epoch;
  }
  EXPECT_EQ(s->Describe(), "piecewise_constant by epoch: 0.001 for epochs < 3, 0.0001 for epochs < 7, then 1e-05");
}

// Keras' PiecewiseConstantDecay: step <= b0 -> v0, b0 < step <= b1 -> v1, step > b1 -> v2.
TEST(LrScheduleTest, PiecewiseByStepUsesLessOrEqual) {
  auto s = Make(R"({"type": "piecewise_constant", "unit": "step", "boundaries": [100, 200],
                    "values": [0.5, 0.25, 0.125]})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kStep);
  const std::vector<std::pair<int64_t, double>> table = {
      {0, 0.5}, {99, 0.5}, {100, 0.5}, {101, 0.25}, {200, 0.25}, {201, 0.125}, {1000000000000, 0.125}};
  for (const auto& [step, lr] : table) {
    EXPECT_EQ(s->LearningRate(0, step), lr) << "step " << step;
    EXPECT_EQ(s->LearningRate(9, step), lr) << "step " << step;  // the epoch does not matter
  }
  EXPECT_EQ(s->Describe(), "piecewise_constant by step: 0.5 for steps <= 100, 0.25 for steps <= 200, then 0.125");
}

TEST(LrScheduleTest, PiecewiseDefaultsToStepAndAllowsNoBoundaries) {
  auto s = Make(R"({"type": "piecewise_constant", "boundaries": [0], "values": [1.0, 2.0]})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kStep);
  EXPECT_EQ(s->LearningRate(0, 0), 1.0);  // step 0 <= 0
  EXPECT_EQ(s->LearningRate(0, 1), 2.0);

  auto by_epoch = Make(R"({"type": "piecewise_constant", "unit": "epoch", "boundaries": [0], "values": [1.0, 2.0]})");
  ASSERT_NE(by_epoch, nullptr);
  EXPECT_EQ(by_epoch->LearningRate(0, 0), 2.0);  // boundary 0 starts value 1 AT epoch 0

  auto constant = Make(R"({"type": "piecewise_constant", "boundaries": [], "values": [0.01]})");
  ASSERT_NE(constant, nullptr);
  EXPECT_EQ(constant->LearningRate(0, 0), 0.01);
  EXPECT_EQ(constant->LearningRate(50, 123456), 0.01);
  EXPECT_EQ(constant->Describe(), "piecewise_constant by step: 0.01");
}

TEST(LrScheduleTest, ExponentialDecayContinuous) {
  auto s = Make(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100,
                    "decay_rate": 0.96})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kStep);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 0), 0.1);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 50), 0.1 * std::sqrt(0.96));
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 100), 0.096);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 250), 0.1 * std::pow(0.96, 2.5));
  EXPECT_GT(s->LearningRate(0, 1), s->LearningRate(0, 2));  // decays every step
  EXPECT_EQ(s->Describe(), "exponential_decay by step: 0.1 * 0.96^(step / 100)");
}

TEST(LrScheduleTest, ExponentialDecayStaircase) {
  auto s = Make(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100,
                    "decay_rate": 0.96, "staircase": true, "unit": "step"})");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 0), 0.1);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 99), 0.1);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 100), 0.096);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 199), 0.096);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 250), 0.1 * 0.96 * 0.96);
  EXPECT_EQ(s->Describe(), "exponential_decay by step: 0.1 * 0.96^(floor(step / 100))");
}

TEST(LrScheduleTest, ExponentialDecayByEpoch) {
  auto s = Make(R"({"type": "exponential_decay", "initial_learning_rate": 0.01, "decay_steps": 2,
                    "decay_rate": 0.5, "staircase": true, "unit": "epoch"})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kEpoch);
  const double expected[6] = {0.01, 0.01, 0.005, 0.005, 0.0025, 0.0025};
  for (int epoch = 0; epoch < 6; ++epoch) {
    EXPECT_DOUBLE_EQ(s->LearningRate(epoch, 12345), expected[epoch]) << "epoch " << epoch;
  }
}

// LearningRate is a function of (epoch, step) alone: a run resumed from a backup at any
// step, or one that asks in any order, gets the same bits.
TEST(LrScheduleTest, ResumePurity) {
  for (const char* text :
       {R"({"type": "piecewise_constant", "unit": "epoch", "boundaries": [3, 7], "values": [1e-3, 1e-4, 1e-5]})",
        R"({"type": "piecewise_constant", "unit": "step", "boundaries": [10, 40], "values": [3, 2, 1]})",
        R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.9})",
        R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.9,
            "staircase": true, "unit": "epoch"})",
        R"({"type": "cosine_decay", "initial_learning_rate": 0.01, "decay_steps": 50, "warmup_target": 0.1,
            "warmup_steps": 20})",
        R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 30, "cycle": true})",
        R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 3, "decay_rate": 0.7,
            "unit": "epoch"})"}) {
    const int kEpochs = 12, kSteps = 9;
    auto straight = Make(text);
    ASSERT_NE(straight, nullptr);
    std::vector<double> forward;
    for (int e = 0; e < kEpochs; ++e) {
      for (int s = 0; s < kSteps; ++s) forward.push_back(straight->LearningRate(e, int64_t{e} * kSteps + s));
    }
    // Backwards on the same object, then each point on a freshly parsed one ("resumed").
    for (int e = kEpochs - 1; e >= 0; --e) {
      for (int s = kSteps - 1; s >= 0; --s) {
        const int64_t step = int64_t{e} * kSteps + s;
        EXPECT_EQ(straight->LearningRate(e, step), forward[step]) << text;
        auto resumed = Make(text);
        ASSERT_NE(resumed, nullptr);
        EXPECT_EQ(resumed->LearningRate(e, step), forward[step]) << text;
      }
    }
  }
}

void ExpectBadJson(const nlohmann::json& j, const std::string& fragment) {
  auto s = LrSchedule::FromJson(j);
  ASSERT_FALSE(s.ok()) << j.dump();
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument) << j.dump();
  EXPECT_EQ(s.status().message().rfind("lr_schedule: ", 0), 0u) << s.status().message();
  EXPECT_NE(s.status().message().find(fragment), std::string::npos) << s.status().message();
}

void ExpectBad(const char* text, const std::string& fragment) { ExpectBadJson(nlohmann::json::parse(text), fragment); }

TEST(LrScheduleTest, ValidationErrors) {
  ExpectBad(R"([1, 2])", "must be a JSON object");
  ExpectBad(R"({"boundaries": [1], "values": [1, 2]})", "missing 'type'");
  ExpectBad(R"({"type": "cosine_decay_restarts"})", "unknown 'type' \"cosine_decay_restarts\"");
  // piecewise_constant
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3, 7], "values": [1e-3, 1e-4]})",
            "'values' must have one more entry than 'boundaries' (got 2 boundaries and 2 values)");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, 1e-4, 1e-5]})",
            "(got 1 boundaries and 3 values)");
  ExpectBad(R"({"type": "piecewise_constant", "values": [1e-3]})", "'boundaries' must be a list");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": 3, "values": [1e-3, 1e-4]})",
            "'boundaries' must be a list");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3]})", "'values' must be a list");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [7, 3], "values": [1, 2, 3]})",
            "'boundaries' must be strictly increasing");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3, 3], "values": [1, 2, 3]})",
            "'boundaries' must be strictly increasing");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [-1], "values": [1, 2]})",
            "'boundaries[0]' must be a non-negative integer");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [1, 2.5], "values": [1, 2, 3]})",
            "'boundaries[1]' must be a non-negative integer");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": ["3"], "values": [1, 2]})",
            "'boundaries[0]' must be a non-negative integer");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, 0]})",
            "'values[1]' must be a positive learning rate");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [-1e-3, 1e-4]})",
            "'values[0]' must be a positive learning rate");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, "1e-4"]})",
            "'values[1]' must be a positive learning rate");
  // JSON text cannot hold inf or NaN, but a json built in code can.
  nlohmann::json inf = nlohmann::json::parse(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, 0]})");
  inf["values"][1] = std::numeric_limits<double>::infinity();
  ExpectBadJson(inf, "'values[1]' must be a positive learning rate");
  nlohmann::json nan = nlohmann::json::parse(R"({"type": "exponential_decay", "initial_learning_rate": 0.1,
                                                 "decay_steps": 100, "decay_rate": 0.9})");
  nan["decay_rate"] = std::nan("");
  ExpectBadJson(nan, "'decay_rate' must be a number in (0, 1]");
  ExpectBad(R"({"type": "piecewise_constant", "unit": "batch", "boundaries": [3], "values": [1, 2]})",
            "'unit' must be \"epoch\"");
  ExpectBad(R"({"type": "piecewise_constant", "boundary": [3], "values": [1, 2]})", "unknown field 'boundary'");
  // exponential_decay
  ExpectBad(R"({"type": "exponential_decay", "decay_steps": 100, "decay_rate": 0.96})",
            "missing 'initial_learning_rate'");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_rate": 0.96})",
            "missing 'decay_steps'");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100})",
            "missing 'decay_rate'");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0, "decay_steps": 100, "decay_rate": 0.96})",
            "'initial_learning_rate' must be a positive number");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 0, "decay_rate": 0.96})",
            "'decay_steps' must be a positive number");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100, "decay_rate": -2})",
            "'decay_rate' must be a number in (0, 1]");
  // A rate above 1 grows the learning rate to infinity; rates beyond float32 are refused.
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100, "decay_rate": 1.5})",
            "'decay_rate' must be a number in (0, 1]");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 1e39, "decay_steps": 100, "decay_rate": 0.5})",
            "'initial_learning_rate' must be at most 3.4e38");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, 1e300]})",
            "'values[1]' must be a positive learning rate within float32's range");
  ExpectBad(R"({"type": "piecewise_constant", "boundaries": [3], "values": [1e-3, 1e-300]})",
            "'values[1]' must be a positive learning rate within float32's range");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100, "decay_rate": 0.9,
                "staircase": "yes"})",
            "'staircase' must be true or false");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100, "decay_rate": 0.9,
                "unit": 1})",
            "'unit' must be");
  ExpectBad(R"({"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100, "decay_rate": 0.9,
                "boundaries": [1]})",
            "unknown field 'boundaries'");
  // cosine_decay
  ExpectBad(R"({"type": "cosine_decay", "decay_steps": 10})", "missing 'initial_learning_rate' (cosine_decay needs");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1})", "missing 'decay_steps'");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0, "decay_steps": 10})",
            "'initial_learning_rate' must be a positive number");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": -0.1, "decay_steps": 10, "warmup_target": 0.1,
                "warmup_steps": 5})",
            "'initial_learning_rate' must be a number in [0, ");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 0})",
            "'decay_steps' must be a positive number");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "alpha": 1.5})",
            "'alpha' must be a number in [0, 1]");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "warmup_target": 0})",
            "'warmup_target' must be a positive number");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "warmup_target": 1,
                "warmup_steps": 2.5})",
            "'warmup_steps' must be a non-negative integer");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "warmup_steps": 5})",
            "'warmup_steps' needs 'warmup_target'");
  ExpectBad(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.5})",
            "unknown field 'decay_rate'");
  // polynomial_decay
  ExpectBad(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1})", "missing 'decay_steps'");
  ExpectBad(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": -1})",
            "'decay_steps' must be a positive number");
  ExpectBad(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 10,
                "end_learning_rate": -1})",
            "'end_learning_rate' must be a number in [0, ");
  ExpectBad(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "power": -2})",
            "'power' must be a number in [0, ");
  ExpectBad(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "cycle": 1})",
            "'cycle' must be true or false");
  // inverse_time_decay
  ExpectBad(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 10})",
            "missing 'decay_rate' (inverse_time_decay needs initial_learning_rate, decay_steps, decay_rate)");
  ExpectBad(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": -1})",
            "'decay_rate' must be a number in [0, ");
  ExpectBad(R"({"type": "inverse_time_decay", "initial_learning_rate": "0.1", "decay_steps": 10,
                "decay_rate": 1})",
            "'initial_learning_rate' must be a positive number");
  ExpectBad(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 1,
                "staircase": "no"})",
            "'staircase' must be true or false");
  ExpectBad(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 1,
                "power": 1})",
            "unknown field 'power'");
}

// ---------------------------------------------------------------- Keras 3's formulas
constexpr double kPi = 3.14159265358979323846;

double KerasCosine(double initial, double decay_steps, double alpha, double step) {
  step = std::min(step, decay_steps);
  const double cosine = 0.5 * (1 + std::cos(kPi * step / decay_steps));
  return initial * ((1 - alpha) * cosine + alpha);
}

TEST(LrScheduleTest, CosineDecayWithoutWarmup) {
  auto s = Make(R"({"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 1000})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->unit(), LrSchedule::Unit::kStep);
  for (int64_t step : {0, 1, 250, 500, 999, 1000, 5000}) {
    EXPECT_NEAR(s->LearningRate(3, step), KerasCosine(0.1, 1000, 0.0, step), 1e-15) << step;
  }
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 0), 0.1);
  EXPECT_NEAR(s->LearningRate(0, 500), 0.05, 1e-15);
  EXPECT_EQ(s->LearningRate(0, 1000), 0.0);  // alpha 0: the rate reaches 0 and stays
  EXPECT_EQ(s->Describe(), "cosine_decay by step: cosine from 0.1 to 0 over 1000 steps");

  auto a = Make(R"({"type": "cosine_decay", "initial_learning_rate": 0.2, "decay_steps": 40, "alpha": 0.1,
                    "unit": "epoch", "name": "CosineDecay"})");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->unit(), LrSchedule::Unit::kEpoch);
  for (int epoch : {0, 7, 20, 39, 40, 100}) {
    EXPECT_NEAR(a->LearningRate(epoch, 123456), KerasCosine(0.2, 40, 0.1, epoch), 1e-15) << epoch;
  }
  EXPECT_NEAR(a->LearningRate(100, 0), 0.02, 1e-15);
}

// Keras 3: linear from initial to warmup_target over warmup_steps, then the cosine from
// warmup_target over decay_steps, then warmup_target * alpha.
TEST(LrScheduleTest, CosineDecayWithWarmup) {
  auto s = Make(R"({"type": "cosine_decay", "initial_learning_rate": 0.0, "decay_steps": 1000, "alpha": 0.01,
                    "warmup_target": 0.1, "warmup_steps": 100})");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->LearningRate(0, 0), 0.0);
  EXPECT_NEAR(s->LearningRate(0, 1), 0.001, 1e-15);
  EXPECT_NEAR(s->LearningRate(0, 50), 0.05, 1e-15);
  EXPECT_NEAR(s->LearningRate(0, 99), 0.099, 1e-15);
  for (int64_t step : {100, 101, 350, 600, 1099, 1100, 1101, 100000}) {
    EXPECT_NEAR(s->LearningRate(0, step), KerasCosine(0.1, 1000, 0.01, static_cast<double>(step - 100)), 1e-15)
        << step;
  }
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 100), 0.1);
  EXPECT_NEAR(s->LearningRate(0, 5000), 0.001, 1e-15);
  EXPECT_EQ(s->Describe(),
            "cosine_decay by step: linear warm-up from 0 to 0.1 over 100 steps, then cosine from 0.1 to 0.001 over "
            "1000 steps");
  // A warm-up from a non-zero rate; warmup_steps 0 with a target decays from the target.
  auto w = Make(R"({"type": "cosine_decay", "initial_learning_rate": 0.02, "decay_steps": 10,
                    "warmup_target": 0.1, "warmup_steps": 4})");
  ASSERT_NE(w, nullptr);
  EXPECT_NEAR(w->LearningRate(0, 1), (0.1 - 0.02) * 0.25 + 0.02, 1e-15);
  auto z = Make(R"({"type": "cosine_decay", "initial_learning_rate": 0.02, "decay_steps": 10,
                    "warmup_target": 0.1})");
  ASSERT_NE(z, nullptr);
  EXPECT_DOUBLE_EQ(z->LearningRate(0, 0), 0.1);
  EXPECT_NEAR(z->LearningRate(0, 5), 0.05, 1e-15);
}

double KerasPolynomial(double initial, double decay_steps, double end, double power, bool cycle, double step) {
  double d = decay_steps;
  if (cycle) {
    d *= step == 0 ? 1.0 : std::ceil(step / decay_steps);
  } else {
    step = std::min(step, decay_steps);
  }
  return (initial - end) * std::pow(1 - step / d, power) + end;
}

TEST(LrScheduleTest, PolynomialDecay) {
  auto s = Make(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 100})");
  ASSERT_NE(s, nullptr);
  // Defaults: end 0.0001, power 1 (linear), no cycle.
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 0), 0.1);
  EXPECT_NEAR(s->LearningRate(0, 50), (0.1 - 0.0001) * 0.5 + 0.0001, 1e-15);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 100), 0.0001);
  EXPECT_DOUBLE_EQ(s->LearningRate(0, 1000), 0.0001);
  EXPECT_EQ(s->Describe(), "polynomial_decay by step: from 0.1 to 0.0001 over 100 steps, power 1");

  auto sq = Make(R"({"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 10000,
                     "end_learning_rate": 0.01, "power": 0.5})");
  ASSERT_NE(sq, nullptr);
  for (int64_t step : {0, 1, 2500, 9999, 10000, 20000}) {
    EXPECT_NEAR(sq->LearningRate(0, step), KerasPolynomial(0.1, 10000, 0.01, 0.5, false, step), 1e-15) << step;
  }

  auto c = Make(R"({"type": "polynomial_decay", "initial_learning_rate": 1.0, "decay_steps": 10,
                    "end_learning_rate": 0.0, "power": 2.0, "cycle": true})");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->LearningRate(0, 0), 1.0);
  EXPECT_NEAR(c->LearningRate(0, 5), 0.25, 1e-15);
  EXPECT_EQ(c->LearningRate(0, 10), 0.0);               // ceil(10 / 10) = 1: the end of the first cycle
  EXPECT_NEAR(c->LearningRate(0, 11), 0.2025, 1e-15);   // d = 20: (1 - 11/20)^2
  for (int64_t step : {3, 15, 20, 21, 37}) {
    EXPECT_NEAR(c->LearningRate(0, step), KerasPolynomial(1.0, 10, 0.0, 2.0, true, step), 1e-15) << step;
  }
}

TEST(LrScheduleTest, InverseTimeDecay) {
  // Keras' docstring example: 0.1 / (1 + 0.5 * step).
  auto s = Make(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 1.0,
                    "decay_rate": 0.5})");
  ASSERT_NE(s, nullptr);
  for (int64_t step : {0, 1, 2, 7, 100}) EXPECT_DOUBLE_EQ(s->LearningRate(0, step), 0.1 / (1 + 0.5 * step)) << step;
  EXPECT_EQ(s->Describe(), "inverse_time_decay by step: 0.1 / (1 + 0.5 * step / 1)");

  auto st = Make(R"({"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 10,
                     "decay_rate": 2, "staircase": true, "unit": "epoch"})");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->unit(), LrSchedule::Unit::kEpoch);
  EXPECT_DOUBLE_EQ(st->LearningRate(9, 99999), 0.1);
  EXPECT_DOUBLE_EQ(st->LearningRate(10, 0), 0.1 / 3);
  EXPECT_DOUBLE_EQ(st->LearningRate(25, 0), 0.1 / 5);
  EXPECT_EQ(st->Describe(), "inverse_time_decay by epoch: 0.1 / (1 + 2 * floor(epoch / 10))");
}

}  // namespace
}  // namespace ringtrain::nn
