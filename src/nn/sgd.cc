#include "nn/sgd.h"

#include "common/logging.h"
#include "kernels/kernels.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Sgd::state() {
  if (momentum_ == 0.0) return {};
  return {{"momentum", &velocity_}};
}

void Sgd::Apply(float* params, const float* grads, size_t n) {
  const float lr = static_cast<float>(lr_);
  if (momentum_ == 0.0) {
    kernels::SgdUpdate(params, grads, n, lr);
    ++iterations_;
    return;
  }
  if (velocity_.size() != n) {
    if (!velocity_.empty()) {
      RT_LOG(ERROR) << "SGD momentum state has " << velocity_.size() << " values but the model has " << n
                    << "; restarting it from zero";
    }
    velocity_.assign(n, 0.0f);
  }
  kernels::SgdMomentumUpdate(params, velocity_.data(), grads, n, lr, static_cast<float>(momentum_), nesterov_);
  ++iterations_;
}

}  // namespace ringtrain::nn
