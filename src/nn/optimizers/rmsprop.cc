#include "nn/optimizers/rmsprop.h"

#include "kernels/kernels.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Rmsprop::state() {
  std::vector<std::pair<std::string, std::vector<float>*>> s = {{"velocity", &velocity_}};
  if (momentum_ > 0) s.emplace_back("momentum", &momentums_);
  if (centered_) s.emplace_back("average_gradient", &average_gradient_);
  return s;
}

void Rmsprop::BuildState(size_t n) {
  Fit(velocity_, "velocity", n);
  if (momentum_ > 0) Fit(momentums_, "momentum", n);
  if (centered_) Fit(average_gradient_, "average_gradient", n);
}

void Rmsprop::Update(float* params, const float* grads, size_t n) {
  kernels::RmspropScalars s;
  s.lr = static_cast<float>(learning_rate());
  s.rho = static_cast<float>(rho_);
  s.one_minus_rho = static_cast<float>(1.0 - rho_);  // Keras: 1 - rho in Python, then float32
  s.momentum = static_cast<float>(momentum_);
  s.epsilon = static_cast<float>(epsilon_);
  kernels::RmspropUpdate(params, velocity_.data(), momentum_ > 0 ? momentums_.data() : nullptr,
                         centered_ ? average_gradient_.data() : nullptr, grads, n, s);
}

}  // namespace ringtrain::nn
