#include "nn/schedules/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "nn/keras/json_fields.h"
#include "nn/schedules/lr_schedule_internal.h"

namespace ringtrain::nn {
namespace lr_internal {

std::string Num(double v) {
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return nlohmann::json(v).dump();
}

const char* UnitName(LrSchedule::Unit u) { return u == LrSchedule::Unit::kEpoch ? "epoch" : "step"; }

double Counter(LrSchedule::Unit u, int epoch0, int64_t step) {
  return u == LrSchedule::Unit::kEpoch ? static_cast<double>(std::max(epoch0, 0))
                                       : static_cast<double>(std::max<int64_t>(step, 0));
}

StatusOr<LrSchedule::Unit> ParseUnit(const nlohmann::json& j) {
  auto it = j.find("unit");
  if (it == j.end()) return LrSchedule::Unit::kStep;
  if (it->is_string() && it->get<std::string>() == "epoch") return LrSchedule::Unit::kEpoch;
  if (it->is_string() && it->get<std::string>() == "step") return LrSchedule::Unit::kStep;
  return InvalidArgumentError(std::string(kCtx) + ": 'unit' must be \"epoch\" (0-based epoch number) or \"step\" " +
                              "(updates applied so far), got " + BriefDump(*it));
}

}  // namespace lr_internal

namespace {

using namespace lr_internal;  // NOLINT: this file's own helpers

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

class PiecewiseConstant final : public LrSchedule {
 public:
  PiecewiseConstant(Unit unit, std::vector<int64_t> boundaries, std::vector<double> values)
      : unit_(unit), boundaries_(std::move(boundaries)), values_(std::move(values)) {}

  double LearningRate(int epoch0, int64_t step) const override {
    // Index = how many boundaries have been passed. By epoch a boundary b is passed AT
    // epoch b (LearningRateScheduler: `epoch < b`); by step it is passed once step > b
    // (PiecewiseConstantDecay: `step <= b`).
    size_t i = 0;
    if (unit_ == Unit::kEpoch) {
      const int64_t e = std::max(epoch0, 0);
      i = std::upper_bound(boundaries_.begin(), boundaries_.end(), e) - boundaries_.begin();
    } else {
      const int64_t t = std::max<int64_t>(step, 0);
      i = std::lower_bound(boundaries_.begin(), boundaries_.end(), t) - boundaries_.begin();
    }
    return values_[i];
  }

  std::string Describe() const override {
    const bool by_epoch = unit_ == Unit::kEpoch;
    std::string s = std::string("piecewise_constant by ") + UnitName(unit_) + ": ";
    for (size_t i = 0; i < boundaries_.size(); ++i) {
      s += Num(values_[i]) + (by_epoch ? " for epochs < " : " for steps <= ") + std::to_string(boundaries_[i]) + ", ";
    }
    s += (boundaries_.empty() ? "" : "then ") + Num(values_.back());
    return s;
  }

  Unit unit() const override { return unit_; }

 private:
  const Unit unit_;
  const std::vector<int64_t> boundaries_;  // strictly increasing, >= 0
  const std::vector<double> values_;       // boundaries_.size() + 1 entries, each > 0
};

class ExponentialDecay final : public LrSchedule {
 public:
  ExponentialDecay(Unit unit, double initial, double decay_steps, double decay_rate, bool staircase)
      : unit_(unit), initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {}

  double LearningRate(int epoch0, int64_t step) const override {
    double p = Counter(unit_, epoch0, step) / decay_steps_;
    if (staircase_) p = std::floor(p);
    return initial_ * std::pow(decay_rate_, p);
  }

  std::string Describe() const override {
    const std::string t = UnitName(unit_);
    const std::string exponent = staircase_ ? "floor(" + t + " / " + Num(decay_steps_) + ")"
                                            : t + " / " + Num(decay_steps_);
    return "exponential_decay by " + t + ": " + Num(initial_) + " * " + Num(decay_rate_) + "^(" + exponent + ")";
  }

  Unit unit() const override { return unit_; }

 private:
  const Unit unit_;
  const double initial_;
  const double decay_steps_;  // > 0
  const double decay_rate_;   // > 0
  const bool staircase_;
};

StatusOr<std::unique_ptr<LrSchedule>> ParsePiecewise(const nlohmann::json& j) {
  const std::string ctx = lr_internal::kCtx;
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "unit", "boundaries", "values", "name"}, ctx));
  RT_ASSIGN_OR_RETURN(LrSchedule::Unit unit, ParseUnit(j));
  auto b = j.find("boundaries");
  if (b == j.end() || !b->is_array()) {
    return InvalidArgumentError(ctx + ": 'boundaries' must be a list of increasing " + UnitName(unit) +
                                " numbers such as [3, 7], got " + (b == j.end() ? "nothing" : BriefDump(*b)));
  }
  auto v = j.find("values");
  if (v == j.end() || !v->is_array()) {
    return InvalidArgumentError(ctx + ": 'values' must be a list of learning rates such as [1e-3, 1e-4, 1e-5], got " +
                                (v == j.end() ? "nothing" : BriefDump(*v)));
  }
  if (v->size() != b->size() + 1) {
    return InvalidArgumentError(ctx + ": 'values' must have one more entry than 'boundaries' (got " +
                                std::to_string(b->size()) + " boundaries and " + std::to_string(v->size()) +
                                " values)");
  }
  std::vector<int64_t> boundaries;
  for (size_t i = 0; i < b->size(); ++i) {
    const auto& e = (*b)[i];
    const bool integral = e.is_number_unsigned() ? e.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()}
                                                 : e.is_number_integer();
    if (!integral || e.get<int64_t>() < 0) {
      return InvalidArgumentError(ctx + ": 'boundaries[" + std::to_string(i) + "]' must be a non-negative integer " +
                                  UnitName(unit) + " number, got " + BriefDump(e));
    }
    const int64_t x = e.get<int64_t>();
    if (!boundaries.empty() && x <= boundaries.back()) {
      return InvalidArgumentError(ctx + ": 'boundaries' must be strictly increasing, but boundaries[" +
                                  std::to_string(i) + "] = " + std::to_string(x) + " follows " +
                                  std::to_string(boundaries.back()));
    }
    boundaries.push_back(x);
  }
  std::vector<double> values;
  for (size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    const double x = e.is_number() ? e.get<double>() : std::nan("");
    // The optimizers take the rate as float32: it must be one, and not round to 0.
    if (!std::isfinite(x) || x <= 0 || x > std::numeric_limits<float>::max() || static_cast<float>(x) == 0.0f) {
      return InvalidArgumentError(ctx + ": 'values[" + std::to_string(i) +
                                  "]' must be a positive learning rate within float32's range, got " + BriefDump(e));
    }
    values.push_back(x);
  }
  return std::unique_ptr<LrSchedule>(new PiecewiseConstant(unit, std::move(boundaries), std::move(values)));
}

StatusOr<std::unique_ptr<LrSchedule>> ParseExponential(const nlohmann::json& j) {
  const std::string ctx = lr_internal::kCtx;
  RT_RETURN_IF_ERROR(
      CheckKnownFields(j, {"type", "unit", "initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name"}, ctx));
  RT_ASSIGN_OR_RETURN(LrSchedule::Unit unit, ParseUnit(j));
  for (const char* required : {"initial_learning_rate", "decay_steps", "decay_rate"}) {
    if (!j.contains(required)) {
      return InvalidArgumentError(ctx + ": missing '" + required + "' (exponential_decay needs " +
                                  "initial_learning_rate, decay_steps and decay_rate)");
    }
  }
  // The fallbacks below are never used: the fields were checked present above.
  RT_ASSIGN_OR_RETURN(double initial, GetNumber(j, "initial_learning_rate", 0, 0, true, kUnbounded, false, ctx));
  RT_ASSIGN_OR_RETURN(double decay_steps, GetNumber(j, "decay_steps", 0, 0, true, kUnbounded, false, ctx));
  // A rate above 1 would grow the learning rate without bound, to infinity.
  RT_ASSIGN_OR_RETURN(double decay_rate, GetNumber(j, "decay_rate", 0, 0, true, 1, false, ctx));
  RT_ASSIGN_OR_RETURN(bool staircase, GetBool(j, "staircase", false, ctx));
  return std::unique_ptr<LrSchedule>(new ExponentialDecay(unit, initial, decay_steps, decay_rate, staircase));
}

StatusOr<std::unique_ptr<LrSchedule>> ParseSchedule(const nlohmann::json& j) {
  const std::string ctx = lr_internal::kCtx;
  if (!j.is_object()) {
    return InvalidArgumentError(ctx + ": must be a JSON object such as {\"type\": \"piecewise_constant\", ...}, got " +
                                BriefDump(j));
  }
  auto t = j.find("type");
  if (t == j.end() || !t->is_string()) {
    return InvalidArgumentError(ctx + ": missing 'type' (" + lr_internal::kTypes + ")");
  }
  const std::string type = t->get<std::string>();
  if (type == "piecewise_constant") return ParsePiecewise(j);
  if (type == "exponential_decay") return ParseExponential(j);
  if (type == "cosine_decay") return ParseCosineDecay(j);
  if (type == "polynomial_decay") return ParsePolynomialDecay(j);
  if (type == "inverse_time_decay") return ParseInverseTimeDecay(j);
  return InvalidArgumentError(ctx + ": unknown 'type' " + BriefDump(*t) + " (supported: " + lr_internal::kTypes + ")");
}

}  // namespace

StatusOr<std::unique_ptr<LrSchedule>> LrSchedule::FromJson(const nlohmann::json& schedule_json) {
  try {
    return ParseSchedule(schedule_json);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string(lr_internal::kCtx) + ": malformed description: " + e.what());
  }
}

}  // namespace ringtrain::nn
