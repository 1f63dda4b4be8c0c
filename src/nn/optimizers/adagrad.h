// Keras 3 Adagrad (keras/src/optimizers/adagrad.py):
//   accumulator starts at initial_accumulator_value (0.1 by default), then
//   accumulator += g^2;  w -= lr * g / sqrt(accumulator + epsilon)
// Threading and errors: as Optimizer.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {

class Adagrad final : public Optimizer {
 public:
  Adagrad(double learning_rate, double initial_accumulator_value, double epsilon, OptimizerOptions options = {})
      : Optimizer(learning_rate, options), initial_(initial_accumulator_value), epsilon_(epsilon) {}

  int state_floats_per_param() const override { return 1; }
  std::string name() const override { return "adagrad"; }
  // {"accumulator"}: filled with initial_accumulator_value by Build / the first Apply.
  std::vector<std::pair<std::string, std::vector<float>*>> state() override { return {{"accumulator", &acc_}}; }

  double initial_accumulator_value() const { return initial_; }
  double epsilon() const { return epsilon_; }

 protected:
  void Update(float* params, const float* grads, size_t n) override;
  void BuildState(size_t n) override { Fit(acc_, "accumulator", n, static_cast<float>(initial_)); }

 private:
  double initial_, epsilon_;
  std::vector<float> acc_;
};

}  // namespace ringtrain::nn
