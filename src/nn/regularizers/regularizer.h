// Weight regularizers in Keras' names: the penalty a layer adds to the loss and its
// gradient. Keras: L1 adds l1 * sum|w|, L2 adds l2 * sum w^2, L1L2 both.
//
// A Regularizer is an immutable value; its methods are const, allocate nothing, never
// block and may run on any thread. FromJson returns INVALID_ARGUMENT about
// Subject::kConfig naming the field (ctx, e.g. "model.layers[2] (dense_1):
// kernel_regularizer").
//
// Accepted (the layer's "kernel_regularizer" / "bias_regularizer" value):
//   null or absent                    no regularization;
//   "l1", "L1"                        L1(l1=0.01);   "l2", "L2"  L2(l2=0.01);
//   "l1_l2"                           L1L2(l1=0.01, l2=0.01) (tf.keras 2's l1_l2());
//   "l1l2", "L1L2"                    L1L2() with its class defaults l1=0, l2=0 (Keras 3);
//   {"class_name": "L1" | "L2" | "L1L2", "config": {"l1": ..., "l2": ...}} (Keras 2,
//   and Keras 3 with "module" / "registered_name"); a missing factor takes the class
//   default (as does null); tf.keras 2's "l" is accepted for L1 and L2.
// Factors must be numbers in [0, 1e30].
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

class Regularizer {
 public:
  Regularizer() = default;  // none
  Regularizer(double l1, double l2) : l1_(l1), l2_(l2) {}

  static StatusOr<Regularizer> FromJson(const nlohmann::json& j, const std::string& ctx);

  double l1() const { return l1_; }
  double l2() const { return l2_; }
  // Whether it adds anything (a zero factor is skipped, as Keras' L1L2 skips it).
  bool active() const { return l1_ != 0 || l2_ != 0; }

  // l1 * sum|w| + l2 * sum w^2 over w[0, n), summed in double in index order.
  double Penalty(const float* w, size_t n) const;
  // g[i] += scale * dPenalty/dw[i] = scale * (l1 * sign(w[i]) + 2 * l2 * w[i]),
  // with sign(0) = 0 as TF's Abs gradient; the term is formed in double and g[i] is
  // rounded once.
  void AddGradient(const float* w, size_t n, float scale, float* g) const;

 private:
  double l1_ = 0;
  double l2_ = 0;
};

}  // namespace ringtrain::nn
