// Keras Adam and AdamW (AdamW is Adam whose weight_decay defaults to 0.004 and must be a
// number), with t = iterations + 1:
//   m += (g - m) * (1 - beta_1)          (= beta_1 * m + (1 - beta_1) * g)
//   v += (g * g - v) * (1 - beta_2)
//   amsgrad:  vhat = max(vhat, v), and vhat replaces v below
//   w -= lr_t * m / (sqrt(v) + epsilon),  lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
// The per-step scalars are computed in double; the element-wise loop is float and
// written in Keras' own order of operations. Threading and errors: as Optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {

class Adam final : public Optimizer {
 public:
  // `name` is "adam" or "adamw" (the same rule; AdamW differs only in its defaults).
  Adam(double learning_rate, double beta_1, double beta_2, double epsilon, bool amsgrad = false,
       OptimizerOptions options = {}, std::string name = "adam")
      : Optimizer(learning_rate, options),
        beta_1_(beta_1),
        beta_2_(beta_2),
        epsilon_(epsilon),
        amsgrad_(amsgrad),
        name_(std::move(name)) {}

  int state_floats_per_param() const override { return amsgrad_ ? 3 : 2; }
  std::string name() const override { return name_; }
  // {"m", first moments}, {"v", second moments}, and {"vhat", their running maximum}
  // with amsgrad (tf.keras 2's slot names).
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
  bool amsgrad() const { return amsgrad_; }

 protected:
  void Update(float* params, const float* grads, size_t n) override;
  void BuildState(size_t n) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  bool amsgrad_;
  std::string name_;
  std::vector<float> m_, v_, vhat_;
};

}  // namespace ringtrain::nn
