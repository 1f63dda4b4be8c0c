// Keras 3 Nadam (keras/src/optimizers/nadam.py), with t = iterations + 1:
//   u_t = beta_1 * (1 - 0.5 * 0.96^t),  u_{t+1} likewise,
//   u_product_t = u_1 * u_2 * ... * u_t,  u_product_{t+1} = u_product_t * u_{t+1}
//   m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
//   m_hat = u_{t+1} * m / (1 - u_product_{t+1}) + (1 - u_t) * g / (1 - u_product_t)
//   v_hat = v / (1 - beta_2^t)
//   w -= m_hat * lr / (sqrt(v_hat) + epsilon)
// Keras keeps u_product in a variable. Here it is a pure function of the step count (the
// product of the u_k in double, see UProduct), cached from step to step: it survives a
// backup with the iteration count alone, with the same bits as a run that never stopped,
// and every state slot stays one float per parameter (what backups store).
// Threading and errors: as Optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/optimizers/optimizer.h"

namespace ringtrain::nn {

class Nadam final : public Optimizer {
 public:
  Nadam(double learning_rate, double beta_1, double beta_2, double epsilon, OptimizerOptions options = {})
      : Optimizer(learning_rate, options), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {}

  int state_floats_per_param() const override { return 2; }
  std::string name() const override { return "nadam"; }
  // {"m", first moments}, {"v", second moments}.
  std::vector<std::pair<std::string, std::vector<float>*>> state() override { return {{"m", &m_}, {"v", &v_}}; }

  // u_product_t = u_1 * ... * u_t (1 for t = 0).
  double UProduct(int64_t t);

  double beta_1() const { return beta_1_; }
  double beta_2() const { return beta_2_; }
  double epsilon() const { return epsilon_; }

 protected:
  void Update(float* params, const float* grads, size_t n) override;
  void BuildState(size_t n) override;

 private:
  double U(int64_t t) const;

  double beta_1_, beta_2_, epsilon_;
  std::vector<float> m_, v_;
  int64_t cached_t_ = 0;        // UProduct(cached_t_) == cached_product_
  double cached_product_ = 1.0;
};

}  // namespace ringtrain::nn
