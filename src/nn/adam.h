// Keras Adam (the TF2 optimizer), with t = iterations + 1:
//   m += (g - m) * (1 - beta_1)          (= beta_1 * m + (1 - beta_1) * g)
//   v += (g * g - v) * (1 - beta_2)
//   w -= lr_t * m / (sqrt(v) + epsilon),  lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
// The per-step scalars are computed in double; the element-wise loop is float and
// written in Keras' own order of operations.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/optimizer.h"

namespace ringtrain::nn {

class Adam final : public Optimizer {
 public:
  Adam(double learning_rate, double beta_1, double beta_2, double epsilon)
      : lr_(learning_rate), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {}

  void Apply(float* params, const float* grads, size_t n) override;
  double learning_rate() const override { return lr_; }
  int state_floats_per_param() const override { return 2; }
  void set_learning_rate(double lr) override { lr_ = lr; }
  int64_t iterations() const override { return iterations_; }
  void set_iterations(int64_t it) override { iterations_ = it; }
  std::string name() const override { return "adam"; }
  // {"m", first moments}, {"v", second moments}.
  std::vector<std::pair<std::string, std::vector<float>*>> state() override;

  // The scalars of the next update (t = iterations + 1), computed in double as above.
  struct StepScalars {
    float alpha;         // lr_t
    float one_minus_b1;  // 1 - beta_1
    float one_minus_b2;  // 1 - beta_2
    float epsilon;
  };
  StepScalars NextStepScalars() const;

  double beta_1() const { return beta_1_; }
  double beta_2() const { return beta_2_; }
  double epsilon() const { return epsilon_; }

 private:
  double lr_, beta_1_, beta_2_, epsilon_;
  int64_t iterations_ = 0;
  std::vector<float> m_, v_;
};

}  // namespace ringtrain::nn
