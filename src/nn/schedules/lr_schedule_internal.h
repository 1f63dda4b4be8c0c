// Helpers shared by the learning-rate schedules' files (lr_schedule.cc and
// lr_schedule_decay.cc). Not part of nn's interface. Pure functions; errors as
// LrSchedule::FromJson's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/schedules/lr_schedule.h"

namespace ringtrain::nn::lr_internal {

inline constexpr char kCtx[] = "lr_schedule";
inline constexpr char kTypes[] =
    "\"piecewise_constant\", \"exponential_decay\", \"cosine_decay\", \"polynomial_decay\" or "
    "\"inverse_time_decay\"";

// Shortest text that reads back as the same double: 100, 0.001, 1e-05.
std::string Num(double v);
const char* UnitName(LrSchedule::Unit u);
// The counter a schedule follows: the 0-based epoch or the step count, negatives as 0.
double Counter(LrSchedule::Unit u, int epoch0, int64_t step);
// "unit": "step" (default) or "epoch".
StatusOr<LrSchedule::Unit> ParseUnit(const nlohmann::json& j);

// Keras' CosineDecay, PolynomialDecay and InverseTimeDecay (lr_schedule_decay.cc).
StatusOr<std::unique_ptr<LrSchedule>> ParseCosineDecay(const nlohmann::json& j);
StatusOr<std::unique_ptr<LrSchedule>> ParsePolynomialDecay(const nlohmann::json& j);
StatusOr<std::unique_ptr<LrSchedule>> ParseInverseTimeDecay(const nlohmann::json& j);

}  // namespace ringtrain::nn::lr_internal
