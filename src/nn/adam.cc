#include "nn/adam.h"

#include <cmath>
#include <limits>

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

namespace {

// The float nearest to `x`, infinity beyond float's range: what IEEE hardware's
// conversion gives, without relying on a conversion ISO C++ leaves undefined for
// out-of-range values (a learning rate near 3.4e38 with beta_1 near 1 makes alpha so).
float ToFloat(double x) {
  if (x > std::numeric_limits<float>::max()) return std::numeric_limits<float>::infinity();
  if (x < -std::numeric_limits<float>::max()) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

}  // namespace

Adam::StepScalars Adam::NextStepScalars() const {
  const double t = static_cast<double>(iterations_ + 1);
  StepScalars s;
  s.alpha = ToFloat(lr_ * std::sqrt(1.0 - std::pow(beta_2_, t)) / (1.0 - std::pow(beta_1_, t)));
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1_);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2_);
  s.epsilon = static_cast<float>(epsilon_);
  return s;
}

}  // namespace ringtrain::nn
