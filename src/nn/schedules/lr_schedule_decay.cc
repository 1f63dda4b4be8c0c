// Keras 3's CosineDecay (with linear warm-up), PolynomialDecay and InverseTimeDecay
// (keras/src/optimizers/schedules/learning_rate_schedule.py), in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "nn/keras/json_fields.h"
#include "nn/schedules/lr_schedule_internal.h"

namespace ringtrain::nn::lr_internal {
namespace {

using Unit = LrSchedule::Unit;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

class CosineDecay final : public LrSchedule {
 public:
  CosineDecay(Unit unit, double initial, double decay_steps, double alpha, std::optional<double> warmup_target,
              double warmup_steps)
      : unit_(unit),
        initial_(initial),
        decay_steps_(decay_steps),
        alpha_(alpha),
        warmup_target_(warmup_target),
        warmup_steps_(warmup_steps) {}

  double LearningRate(int epoch0, int64_t step) const override {
    double t = Counter(unit_, epoch0, step);
    if (!warmup_target_) return Decay(std::min(t, decay_steps_), initial_);
    t = std::min(t, decay_steps_ + warmup_steps_);
    if (t < warmup_steps_) return (*warmup_target_ - initial_) * (t / warmup_steps_) + initial_;
    return Decay(t - warmup_steps_, *warmup_target_);
  }

  std::string Describe() const override {
    const std::string t = UnitName(unit_);
    const double from = warmup_target_ ? *warmup_target_ : initial_;
    std::string s = "cosine_decay by " + t + ": ";
    if (warmup_target_) {
      s += "linear warm-up from " + Num(initial_) + " to " + Num(from) + " over " + Num(warmup_steps_) + " " + t +
           "s, then ";
    }
    return s + "cosine from " + Num(from) + " to " + Num(from * alpha_) + " over " + Num(decay_steps_) + " " + t + "s";
  }

  Unit unit() const override { return unit_; }

 private:
  double Decay(double t, double from) const {
    const double completed_fraction = t / decay_steps_;
    const double cosine_decayed = 0.5 * (1.0 + std::cos(kPi * completed_fraction));
    const double decayed = (1 - alpha_) * cosine_decayed + alpha_;
    return from * decayed;
  }

  const Unit unit_;
  const double initial_, decay_steps_, alpha_;
  const std::optional<double> warmup_target_;
  const double warmup_steps_;
};

class PolynomialDecay final : public LrSchedule {
 public:
  PolynomialDecay(Unit unit, double initial, double decay_steps, double end, double power, bool cycle)
      : unit_(unit), initial_(initial), decay_steps_(decay_steps), end_(end), power_(power), cycle_(cycle) {}

  double LearningRate(int epoch0, int64_t step) const override {
    double t = Counter(unit_, epoch0, step);
    double steps = decay_steps_;
    if (cycle_) {
      // The first multiple of decay_steps at or above t (1 x at t = 0).
      steps *= t == 0 ? 1.0 : std::ceil(t / decay_steps_);
    } else {
      t = std::min(t, decay_steps_);
    }
    const double p = t / steps;
    return (initial_ - end_) * std::pow(1 - p, power_) + end_;
  }

  std::string Describe() const override {
    const std::string t = UnitName(unit_);
    return "polynomial_decay by " + t + ": from " + Num(initial_) + " to " + Num(end_) + " over " +
           Num(decay_steps_) + " " + t + "s, power " + Num(power_) + (cycle_ ? ", cycling" : "");
  }

  Unit unit() const override { return unit_; }

 private:
  const Unit unit_;
  const double initial_, decay_steps_, end_, power_;
  const bool cycle_;
};

class InverseTimeDecay final : public LrSchedule {
 public:
  InverseTimeDecay(Unit unit, double initial, double decay_steps, double decay_rate, bool staircase)
      : unit_(unit), initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {}

  double LearningRate(int epoch0, int64_t step) const override {
    double p = Counter(unit_, epoch0, step) / decay_steps_;
    if (staircase_) p = std::floor(p);
    return initial_ / (1.0 + decay_rate_ * p);
  }

  std::string Describe() const override {
    const std::string t = UnitName(unit_);
    const std::string p = staircase_ ? "floor(" + t + " / " + Num(decay_steps_) + ")" : t + " / " + Num(decay_steps_);
    return "inverse_time_decay by " + t + ": " + Num(initial_) + " / (1 + " + Num(decay_rate_) + " * " + p + ")";
  }

  Unit unit() const override { return unit_; }

 private:
  const Unit unit_;
  const double initial_, decay_steps_, decay_rate_;
  const bool staircase_;
};

Status RequireFields(const nlohmann::json& j, std::initializer_list<const char*> keys, const char* type) {
  std::string list;
  for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
  for (const char* k : keys) {
    if (!j.contains(k)) {
      return InvalidArgumentError(std::string(kCtx) + ": missing '" + k + "' (" + type + " needs " + list + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<LrSchedule>> ParseCosineDecay(const nlohmann::json& j) {
  const std::string ctx = kCtx;
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "unit", "initial_learning_rate", "decay_steps", "alpha", "warmup_target", "warmup_steps", "name"},
      ctx));
  RT_ASSIGN_OR_RETURN(Unit unit, ParseUnit(j));
  RT_RETURN_IF_ERROR(RequireFields(j, {"initial_learning_rate", "decay_steps"}, "cosine_decay"));
  std::optional<double> target;
  if (j.contains("warmup_target") && !j["warmup_target"].is_null()) {
    RT_ASSIGN_OR_RETURN(double v, GetNumber(j, "warmup_target", 0, 0, true, kInf, false, ctx));
    target = v;
  }
  // With a warm-up the rate may start at 0 (Keras' own example); without one it must not.
  RT_ASSIGN_OR_RETURN(double initial,
                      GetNumber(j, "initial_learning_rate", 0, 0, /*lo_open=*/!target, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double decay_steps, GetNumber(j, "decay_steps", 0, 0, true, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double alpha, GetNumber(j, "alpha", 0.0, 0, false, 1, false, ctx));
  double warmup_steps = 0;
  if (j.contains("warmup_steps")) {
    const auto& w = j["warmup_steps"];
    const bool integral = w.is_number_integer() || w.is_number_unsigned();
    if (!integral || w.get<int64_t>() < 0 || w.get<int64_t>() > (int64_t{1} << 53)) {
      return InvalidArgumentError(ctx + ": 'warmup_steps' must be a non-negative integer, got " + BriefDump(w));
    }
    warmup_steps = static_cast<double>(w.get<int64_t>());
    if (warmup_steps > 0 && !target) {
      return InvalidArgumentError(ctx + ": 'warmup_steps' needs 'warmup_target' (the rate to warm up to); Keras " +
                                  "ignores it without one: remove it or set warmup_target");
    }
  }
  return std::unique_ptr<LrSchedule>(new CosineDecay(unit, initial, decay_steps, alpha, target, warmup_steps));
}

StatusOr<std::unique_ptr<LrSchedule>> ParsePolynomialDecay(const nlohmann::json& j) {
  const std::string ctx = kCtx;
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "unit", "initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle", "name"}, ctx));
  RT_ASSIGN_OR_RETURN(Unit unit, ParseUnit(j));
  RT_RETURN_IF_ERROR(RequireFields(j, {"initial_learning_rate", "decay_steps"}, "polynomial_decay"));
  RT_ASSIGN_OR_RETURN(double initial, GetNumber(j, "initial_learning_rate", 0, 0, true, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double decay_steps, GetNumber(j, "decay_steps", 0, 0, true, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double end, GetNumber(j, "end_learning_rate", 0.0001, 0, false, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double power, GetNumber(j, "power", 1.0, 0, false, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(bool cycle, GetBool(j, "cycle", false, ctx));
  return std::unique_ptr<LrSchedule>(new PolynomialDecay(unit, initial, decay_steps, end, power, cycle));
}

StatusOr<std::unique_ptr<LrSchedule>> ParseInverseTimeDecay(const nlohmann::json& j) {
  const std::string ctx = kCtx;
  RT_RETURN_IF_ERROR(CheckKnownFields(
      j, {"type", "unit", "initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name"}, ctx));
  RT_ASSIGN_OR_RETURN(Unit unit, ParseUnit(j));
  RT_RETURN_IF_ERROR(
      RequireFields(j, {"initial_learning_rate", "decay_steps", "decay_rate"}, "inverse_time_decay"));
  RT_ASSIGN_OR_RETURN(double initial, GetNumber(j, "initial_learning_rate", 0, 0, true, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double decay_steps, GetNumber(j, "decay_steps", 0, 0, true, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(double decay_rate, GetNumber(j, "decay_rate", 0, 0, false, kInf, false, ctx));
  RT_ASSIGN_OR_RETURN(bool staircase, GetBool(j, "staircase", false, ctx));
  return std::unique_ptr<LrSchedule>(new InverseTimeDecay(unit, initial, decay_steps, decay_rate, staircase));
}

}  // namespace ringtrain::nn::lr_internal
