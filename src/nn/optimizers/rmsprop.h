// Keras 3 RMSprop (keras/src/optimizers/rmsprop.py):
//   velocity = rho * velocity + (1 - rho) * g^2
//   centered: average_gradient = rho * average_gradient + (1 - rho) * g,
//             denominator = velocity - average_gradient^2 + epsilon
//   else      denominator = velocity + epsilon
//   increment = lr * g / sqrt(denominator)
//   momentum > 0: mom = momentum * mom + increment;  w -= mom
//   else          w -= increment
// Note epsilon sits inside the square root, as in Keras (not tf.keras 1's Adam-like form).
// Threading and errors: as Optimizer.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {

class Rmsprop final : public Optimizer {
 public:
  Rmsprop(double learning_rate, double rho, double momentum, double epsilon, bool centered,
          OptimizerOptions options = {})
      : Optimizer(learning_rate, options), rho_(rho), momentum_(momentum), epsilon_(epsilon), centered_(centered) {}

  int state_floats_per_param() const override { return 1 + (momentum_ > 0 ? 1 : 0) + (centered_ ? 1 : 0); }
  std::string name() const override { return "rmsprop"; }
  // {"velocity"}, then {"momentum"} when momentum > 0, then {"average_gradient"} when
  // centered (Keras 3's slot names).
  std::vector<std::pair<std::string, std::vector<float>*>> state() override;

  double rho() const { return rho_; }
  double momentum() const { return momentum_; }
  double epsilon() const { return epsilon_; }
  bool centered() const { return centered_; }

 protected:
  void Update(float* params, const float* grads, size_t n) override;
  void BuildState(size_t n) override;

 private:
  double rho_, momentum_, epsilon_;
  bool centered_;
  std::vector<float> velocity_, momentums_, average_gradient_;
};

}  // namespace ringtrain::nn
