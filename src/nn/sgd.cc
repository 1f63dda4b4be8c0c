#include "nn/sgd.h"

#include "common/logging.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Sgd::state() {
  if (momentum_ == 0.0) return {};
  return {{"momentum", &velocity_}};
}

void Sgd::Apply(float* params, const float* grads, size_t n) {
  const float lr = static_cast<float>(lr_);
  if (momentum_ == 0.0) {
    for (size_t i = 0; i < n; ++i) params[i] -= grads[i] * lr;
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
  const float mom = static_cast<float>(momentum_);
  float* v = velocity_.data();
  if (nesterov_) {
    for (size_t i = 0; i < n; ++i) {
      v[i] = v[i] * mom - grads[i] * lr;
      params[i] += v[i] * mom - grads[i] * lr;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      v[i] = v[i] * mom - grads[i] * lr;
      params[i] += v[i];
    }
  }
  ++iterations_;
}

}  // namespace ringtrain::nn
