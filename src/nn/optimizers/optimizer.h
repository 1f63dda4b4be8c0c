// Optimizers with Keras 3's names, defaults and update rules (keras/src/optimizers/):
//   {"type": "sgd",     "learning_rate": 0.01,  "momentum": 0.0, "nesterov": false}
//   {"type": "adam",    "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7,
//                       "amsgrad": false}
//   {"type": "adamw",   as adam, "weight_decay": 0.004}
//   {"type": "rmsprop", "learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7,
//                       "centered": false}
//   {"type": "adagrad", "learning_rate": 0.001, "initial_accumulator_value": 0.1, "epsilon": 1e-7}
//   {"type": "nadam",   "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
// "type" is the snake name or Keras' class name in any case ("RMSprop", "AdamW"). Every
// optimizer also takes Keras' "weight_decay" (p -= p * weight_decay * lr before the
// update), "clipnorm", "global_clipnorm" and "clipvalue" (at most one; gradient_clip.h),
// and "name" (ignored). Keras' use_ema, loss_scale_factor and gradient_accumulation_steps
// are accepted only at their "off" values (what Keras' get_config writes) and refused
// otherwise, naming the argument; "decay" (tf.keras 2's legacy argument) is refused with
// a pointer to the "inverse_time_decay" schedule.
//
// Apply is one Keras step: clip the gradient (already all-reduced: identical on every
// replica, so clipping it is what Keras does under a strategy), apply weight decay, apply
// the rule, count the step. The element-wise work runs in kernels/ without contraction:
// the same bits on every CPU and thread count.
//
// Threading: one thread at a time (the trainer's). Apply allocates its state on first
// use (or Build does); nothing else allocates per step except a gradient copy of n floats
// when clipping is on (work_floats_per_param).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/optimizers/gradient_clip.h"

namespace ringtrain::nn {

// The arguments every Keras optimizer takes besides its own.
struct OptimizerOptions {
  std::optional<double> weight_decay;  // Keras' None: no decay
  GradientClip clip;
};

class Optimizer {
 public:
  using VariableSpan = nn::VariableSpan;

  explicit Optimizer(double learning_rate, OptimizerOptions options = {})
      : lr_(learning_rate), options_(options) {}
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of params[0..n) with grads[0..n) (see above). Allocates its state on first use.
  void Apply(float* params, const float* grads, size_t n);

  // The trainable variables, in buffer order, covering [0, n) of Apply's buffer: clipnorm
  // works per variable. Without it (or when the spans do not cover Apply's n, which logs
  // an error) the whole buffer counts as one variable. Also allocates the state.
  virtual void SetVariables(std::vector<VariableSpan> vars);
  const std::vector<VariableSpan>& variables() const { return vars_; }

  // Brings every state buffer to n values, with Keras' initial values (zeros; Adagrad's
  // initial_accumulator_value), unless it already has n. A buffer of another non-zero size
  // (a bad restore) is logged and restarted. Call before reading state() for a checkpoint.
  void Build(size_t n) { BuildState(n); }

  double learning_rate() const { return lr_; }
  void set_learning_rate(double lr) { lr_ = lr; }
  int64_t iterations() const { return iterations_; }  // updates applied so far
  void set_iterations(int64_t it) { iterations_ = it; }
  // "sgd", "adam", "adamw", "rmsprop", "adagrad" or "nadam".
  virtual std::string name() const = 0;
  // Named state buffers, Keras' slot names ("momentum"; "m", "v", "velocity_hat";
  // "velocity", "average_gradient"; "accumulator"), one float per parameter each; empty
  // before Build or the first Apply. The list depends only on the configuration.
  virtual std::vector<std::pair<std::string, std::vector<float>*>> state() = 0;
  // How many floats of state each parameter gets (the size of state()), for memory
  // estimates before the state is allocated.
  virtual int state_floats_per_param() const = 0;
  // Per-step working floats per parameter besides the state: the clipped gradient's copy.
  int work_floats_per_param() const { return options_.clip.active() ? 1 : 0; }

  const OptimizerOptions& options() const { return options_; }
  // Whether Apply does more than the rule (clipping or weight decay): an engine with its
  // own update (the GPU one) must refuse such an optimizer or implement both.
  bool transforms_gradients() const { return options_.clip.active() || options_.weight_decay.has_value(); }

  // Errors name the field: "optimizer: 'learning_rate' must be a positive number".
  static StatusOr<std::unique_ptr<Optimizer>> FromJson(const nlohmann::json& optimizer_json);

 protected:
  // The rule alone, on the (clipped) gradient, for step iterations() + 1; the state is
  // already built for n.
  virtual void Update(float* params, const float* grads, size_t n) = 0;
  virtual void BuildState(size_t n) = 0;
  // For BuildState: resizes `buffer` to n values of `init` unless it has n already.
  void Fit(std::vector<float>& buffer, const char* slot, size_t n, float init = 0.0f) const;

 private:
  double lr_;
  int64_t iterations_ = 0;
  OptimizerOptions options_;
  std::vector<VariableSpan> vars_;
  std::vector<float> clipped_;  // the clipped gradient, when clipping is on
  bool warned_spans_ = false;
};

}  // namespace ringtrain::nn
