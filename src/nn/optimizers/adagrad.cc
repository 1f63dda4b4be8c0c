#include "nn/optimizers/adagrad.h"

#include "kernels/kernels.h"

namespace ringtrain::nn {

void Adagrad::Update(float* params, const float* grads, size_t n) {
  kernels::AdagradUpdate(params, acc_.data(), grads, n, static_cast<float>(learning_rate()),
                         static_cast<float>(epsilon_));
}

}  // namespace ringtrain::nn
