#include "nn/optimizers/adam.h"

#include <cmath>

#include "kernels/kernels.h"
#include "nn/optimizers/optimizer_math.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Adam::state() {
  if (amsgrad_) return {{"m", &m_}, {"v", &v_}, {"vhat", &vhat_}};
  return {{"m", &m_}, {"v", &v_}};
}

void Adam::BuildState(size_t n) {
  Fit(m_, "m", n);
  Fit(v_, "v", n);
  if (amsgrad_) Fit(vhat_, "vhat", n);
}

void Adam::Update(float* params, const float* grads, size_t n) {
  const StepScalars s = NextStepScalars();
  if (amsgrad_) {
    kernels::AmsgradUpdate(params, m_.data(), v_.data(), vhat_.data(), grads, n, s.alpha, s.one_minus_b1,
                           s.one_minus_b2, s.epsilon);
  } else {
    kernels::AdamUpdate(params, m_.data(), v_.data(), grads, n, s.alpha, s.one_minus_b1, s.one_minus_b2, s.epsilon);
  }
}

Adam::StepScalars Adam::NextStepScalars() const {
  const double t = static_cast<double>(iterations() + 1);
  StepScalars s;
  s.alpha = ToFloat(learning_rate() * std::sqrt(1.0 - std::pow(beta_2_, t)) / (1.0 - std::pow(beta_1_, t)));
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1_);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2_);
  s.epsilon = static_cast<float>(epsilon_);
  return s;
}

}  // namespace ringtrain::nn
