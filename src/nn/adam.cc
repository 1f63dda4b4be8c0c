#include "nn/adam.h"

#include <cmath>

#include "common/logging.h"
#include "kernels/kernels.h"

namespace ringtrain::nn {

std::vector<std::pair<std::string, std::vector<float>*>> Adam::state() { return {{"m", &m_}, {"v", &v_}}; }

void Adam::Apply(float* params, const float* grads, size_t n) {
  if (m_.size() != n || v_.size() != n) {
    if (!m_.empty() || !v_.empty()) {
      RT_LOG(ERROR) << "Adam state has " << m_.size() << "/" << v_.size() << " values but the model has " << n
                    << "; restarting it from zero";
    }
    m_.assign(n, 0.0f);
    v_.assign(n, 0.0f);
  }
  const StepScalars s = NextStepScalars();
  kernels::AdamUpdate(params, m_.data(), v_.data(), grads, n, s.alpha, s.one_minus_b1, s.one_minus_b2, s.epsilon);
  ++iterations_;
}

Adam::StepScalars Adam::NextStepScalars() const {
  const double t = static_cast<double>(iterations_ + 1);
  StepScalars s;
  s.alpha = static_cast<float>(lr_ * std::sqrt(1.0 - std::pow(beta_2_, t)) / (1.0 - std::pow(beta_1_, t)));
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1_);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2_);
  s.epsilon = static_cast<float>(epsilon_);
  return s;
}

}  // namespace ringtrain::nn
