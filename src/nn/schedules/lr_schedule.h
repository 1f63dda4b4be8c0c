// Learning-rate schedules with Keras' semantics, read from the job's top-level
// "lr_schedule" field. Five kinds:
//
//   {"type": "piecewise_constant", "unit": "epoch" | "step", "boundaries": [b0, b1, ...],
//    "values": [v0, v1, ..., vn]}
//     unit "epoch" is Keras' LearningRateScheduler callback (the seed tutorial's `decay`):
//       with e the 0-based epoch, e < b0 -> v0, b0 <= e < b1 -> v1, ..., e >= b(n-1) -> vn
//       (value i+1 starts AT epoch b_i).
//     unit "step" is Keras' PiecewiseConstantDecay on optimizer.iterations (t = updates
//       applied before this one, 0 on the first step): t <= b0 -> v0, b0 < t <= b1 -> v1, ...,
//       t > b(n-1) -> vn (value i+1 starts one step AFTER b_i: note the <=).
//     `values` has exactly one more entry than `boundaries`; boundaries are strictly
//     increasing non-negative integers; values are positive finite numbers.
//
//   {"type": "exponential_decay", "initial_learning_rate": 0.1, "decay_steps": 100,
//    "decay_rate": 0.96, "staircase": false, "unit": "step"}
//     Keras' ExponentialDecay: lr = initial * decay_rate ^ (t / decay_steps), with the
//     exponent floor(t / decay_steps) when staircase. t is the step count as above, or the
//     0-based epoch when unit is "epoch".
//
//   {"type": "cosine_decay", "initial_learning_rate": 0.1, "decay_steps": 1000, "alpha": 0.0,
//    "warmup_target": null, "warmup_steps": 0}
//     Keras 3's CosineDecay, with t the counter: without warmup_target,
//       lr = initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(t, decay_steps) / decay_steps)) + alpha);
//     with one, t = min(t, warmup_steps + decay_steps), a linear warm-up
//       lr = (warmup_target - initial) * t / warmup_steps + initial   for t < warmup_steps,
//     then the cosine above from warmup_target over t - warmup_steps. initial may be 0
//     only with a warm-up; warmup_steps without warmup_target is refused (Keras ignores it).
//
//   {"type": "polynomial_decay", "initial_learning_rate": 0.1, "decay_steps": 1000,
//    "end_learning_rate": 0.0001, "power": 1.0, "cycle": false}
//     Keras' PolynomialDecay: lr = (initial - end) * (1 - t / d)^power + end with
//     t = min(t, decay_steps), d = decay_steps; when cycle, t is not capped and d is the
//     first multiple of decay_steps >= t (decay_steps itself at t = 0).
//
//   {"type": "inverse_time_decay", "initial_learning_rate": 0.1, "decay_steps": 1,
//    "decay_rate": 0.5, "staircase": false}
//     Keras' InverseTimeDecay: lr = initial / (1 + decay_rate * t / decay_steps), with
//     floor(t / decay_steps) when staircase.
//
// "unit" defaults to "step" for every kind, as Keras' schedule classes count steps; "epoch"
// makes t the 0-based epoch. "name" (what Keras' get_config writes) is accepted and unused.
//
// The schedule replaces the optimizer's "learning_rate": the trainer sets the optimizer's
// rate from LearningRate() before every step, so a rate written in "optimizer" is ignored
// when a schedule is present (piecewise uses its values, the others their
// initial_learning_rate). Cosine and polynomial decay may reach 0 (alpha 0, end 0).
//
// Thread-safety: immutable after FromJson; any thread may call the const methods.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

class LrSchedule {
 public:
  enum class Unit { kEpoch, kStep };

  virtual ~LrSchedule() = default;

  // The rate for the update taken during 0-based epoch `epoch0` when `step` updates have
  // already been applied (the optimizer's iterations()). A pure function of its arguments:
  // a run resumed from a backup at any step gets the same rate as one that never stopped.
  // Negative arguments are treated as 0.
  virtual double LearningRate(int epoch0, int64_t step) const = 0;

  // One line for logs, e.g. "piecewise_constant by epoch: 0.001 for epochs < 3, 0.0001 for
  // epochs < 7, then 1e-05".
  virtual std::string Describe() const = 0;

  // Which counter the schedule follows: an epoch-unit schedule changes only between epochs.
  virtual Unit unit() const = 0;

  // Parses the "lr_schedule" object. The caller handles an absent or null field (no
  // schedule). Errors are INVALID_ARGUMENT, start with "lr_schedule: " and name the field.
  static StatusOr<std::unique_ptr<LrSchedule>> FromJson(const nlohmann::json& schedule_json);
};

}  // namespace ringtrain::nn
