#include "nn/optimizers/sgd.h"

#include "kernels/kernels.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Sgd::state() {
  if (momentum_ == 0.0) return {};
  return {{"momentum", &velocity_}};
}

void Sgd::BuildState(size_t n) {
  if (momentum_ != 0.0) Fit(velocity_, "momentum", n);
}

void Sgd::Update(float* params, const float* grads, size_t n) {
  const float lr = static_cast<float>(learning_rate());
  if (momentum_ == 0.0) {
    kernels::SgdUpdate(params, grads, n, lr);
    return;
  }
  kernels::SgdMomentumUpdate(params, velocity_.data(), grads, n, lr, static_cast<float>(momentum_), nesterov_);
}

}  // namespace ringtrain::nn
