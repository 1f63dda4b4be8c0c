// Keras' activation functions on the CPU, elementwise over float32 rows (softmax: over
// each row of `units`, Keras' default last axis), and the activation and bias gradients
// of a kernel's backward pass over a row-major [rows, units] matrix. Pure functions: no
// allocation, no state, any thread; the same inputs give the same bits (one pass in a
// fixed order).
//
// Dense and Conv2D keep relu fused into their kernels (kernels/kernels.h); every other
// activation runs here after the linear part, and the backward functions take both the
// pre-activation x and the output y (each kind reads the one it needs).
#pragma once

#include <cstddef>

#include "ops/activation.h"

namespace ringtrain::backends::cpu {

using ops::Activation;

// y = act(x) over rows x units floats. `y` may be `x` (in place).
void ActivationForward(Activation act, const float* x, size_t rows, size_t units, float* y);

// dx = dout * act'(x), from the pre-activation x and the output y of the same Forward.
// `dx` may be `dout`; it must not be x or y.
void ActivationBackwardInto(Activation act, const float* dout, const float* x, const float* y, size_t rows,
                            size_t units, float* dx);

// The gradient before the activation, from the pre-activation x and the output y (x may
// be null for linear and relu, whose gradient reads y only). For linear it is dout
// itself; otherwise it is written to `scratch` and returned.
inline const float* ActivationBackward(const float* dout, const float* x, const float* y, size_t rows, size_t units,
                                       Activation act, float* scratch) {
  if (act == Activation::kLinear) return dout;
  if (act == Activation::kRelu) {
    const size_t n = rows * units;
    for (size_t i = 0; i < n; ++i) scratch[i] = y[i] > 0.0f ? dout[i] : 0.0f;
    return scratch;
  }
  ActivationBackwardInto(act, dout, x, y, rows, units, scratch);
  return scratch;
}

// bias_grad[u] = sum over rows of d[r, u] (overwrites).
inline void BiasGrad(const float* __restrict d, size_t rows, size_t units, float* __restrict bias_grad) {
  for (size_t u = 0; u < units; ++u) bias_grad[u] = 0.0f;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = d + r * units;
    for (size_t u = 0; u < units; ++u) bias_grad[u] += row[u];
  }
}

// ActivationBackward and BiasGrad (bias_grad may be null); relu in one fused pass.
// The pointers must not overlap (__restrict lets the compiler vectorise the fused loop).
inline const float* ActivationBiasBackward(const float* __restrict dout, const float* x, const float* __restrict y,
                                           size_t rows, size_t units, Activation act, float* __restrict scratch,
                                           float* __restrict bias_grad) {
  if (act != Activation::kRelu) {
    const float* d = ActivationBackward(dout, x, y, rows, units, act, scratch);
    if (bias_grad != nullptr) BiasGrad(d, rows, units, bias_grad);
    return d;
  }
  if (bias_grad == nullptr) return ActivationBackward(dout, x, y, rows, units, act, scratch);
  for (size_t u = 0; u < units; ++u) bias_grad[u] = 0.0f;
  for (size_t r = 0; r < rows; ++r) {
    const float* dr = dout + r * units;
    const float* yr = y + r * units;
    float* sr = scratch + r * units;
    for (size_t u = 0; u < units; ++u) {
      sr[u] = yr[u] > 0.0f ? dr[u] : 0.0f;
      bias_grad[u] += sr[u];
    }
  }
  return scratch;
}

// For linear and relu, whose gradient reads y only (the GPU engine's two; its tests
// compare against this form).
inline const float* ActivationBiasBackward(const float* __restrict dout, const float* __restrict y, size_t rows,
                                           size_t units, Activation act, float* __restrict scratch,
                                           float* __restrict bias_grad) {
  return ActivationBiasBackward(dout, nullptr, y, rows, units, act, scratch, bias_grad);
}

}  // namespace ringtrain::backends::cpu
