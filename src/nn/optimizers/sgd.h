// Keras SGD:  without momentum  w -= lr * g
//             with momentum     v = momentum * v - lr * g;  w += v
//             nesterov          v as above;  w += momentum * v - lr * g
// Threading and errors: as Optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {

class Sgd final : public Optimizer {
 public:
  Sgd(double learning_rate, double momentum, bool nesterov, OptimizerOptions options = {})
      : Optimizer(learning_rate, options), momentum_(momentum), nesterov_(nesterov) {}

  int state_floats_per_param() const override { return momentum_ == 0.0 ? 0 : 1; }
  std::string name() const override { return "sgd"; }
  // {"momentum", velocity} when momentum > 0 (Keras keeps no state without it).
  std::vector<std::pair<std::string, std::vector<float>*>> state() override;

  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void Update(float* params, const float* grads, size_t n) override;
  void BuildState(size_t n) override;

 private:
  double momentum_;
  bool nesterov_;
  std::vector<float> velocity_;
};

}  // namespace ringtrain::nn
