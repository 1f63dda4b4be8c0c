#include "nn/optimizers/nadam.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace ringtrain::nn {

void Nadam::BuildState(size_t n) {
  Fit(m_, "m", n);
  Fit(v_, "v", n);
}

double Nadam::U(int64_t t) const { return beta_1_ * (1.0 - 0.5 * std::pow(0.96, static_cast<double>(t))); }

double Nadam::UProduct(int64_t t) {
  // 0.96^k underflows to 0 in double before k = 20000 (0.96^18300 < 4.9e-324): from there
  // on u_k is beta_1 exactly, and the tail of the product is one pow. So the work is
  // bounded whatever the step count, and the same bits whether the product was built
  // step by step or at once after a restore (the same multiplications in the same order).
  constexpr int64_t kHead = 20000;
  const int64_t head = std::min(t, kHead);
  if (head < cached_t_) {  // a restore to an earlier step: start over
    cached_t_ = 0;
    cached_product_ = 1.0;
  }
  while (cached_t_ < head) cached_product_ *= U(++cached_t_);
  if (t <= kHead) return cached_product_;
  return cached_product_ * std::pow(beta_1_, static_cast<double>(t - kHead));
}

void Nadam::Update(float* params, const float* grads, size_t n) {
  const int64_t t = iterations() + 1;
  const double u = U(t), u_next = U(t + 1);
  const double u_product = UProduct(t);
  const double u_product_next = u_product * u_next;
  kernels::NadamScalars s;
  s.lr = static_cast<float>(learning_rate());
  s.one_minus_b1 = static_cast<float>(1.0 - beta_1_);
  s.one_minus_b2 = static_cast<float>(1.0 - beta_2_);
  s.u_next = static_cast<float>(u_next);
  s.one_minus_u = static_cast<float>(1.0 - u);
  s.one_minus_u_product = static_cast<float>(1.0 - u_product);
  s.one_minus_u_product_next = static_cast<float>(1.0 - u_product_next);
  s.one_minus_b2_power = static_cast<float>(1.0 - std::pow(beta_2_, static_cast<double>(t)));
  s.epsilon = static_cast<float>(epsilon_);
  kernels::NadamUpdate(params, m_.data(), v_.data(), grads, n, s);
}

}  // namespace ringtrain::nn
