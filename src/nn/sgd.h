// Keras SGD:  without momentum  w -= lr * g
//             with momentum     v = momentum * v - lr * g;  w += v
//             nesterov          v as above;  w += momentum * v - lr * g
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/optimizer.h"

namespace ringtrain::nn {

class Sgd final : public Optimizer {
 public:
  Sgd(double learning_rate, double momentum, bool nesterov)
      : lr_(learning_rate), momentum_(momentum), nesterov_(nesterov) {}

  void Apply(float* params, const float* grads, size_t n) override;
  double learning_rate() const override { return lr_; }
  int state_floats_per_param() const override { return momentum_ == 0.0 ? 0 : 1; }
  void set_learning_rate(double lr) override { lr_ = lr; }
  int64_t iterations() const override { return iterations_; }
  void set_iterations(int64_t it) override { iterations_ = it; }
  std::string name() const override { return "sgd"; }
  // {"momentum", velocity} when momentum > 0 (Keras keeps no state without it).
  std::vector<std::pair<std::string, std::vector<float>*>> state() override;

  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

 private:
  double lr_;
  double momentum_;
  bool nesterov_;
  int64_t iterations_ = 0;
  std::vector<float> velocity_;
};

}  // namespace ringtrain::nn
