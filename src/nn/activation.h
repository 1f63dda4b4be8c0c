// The activation and bias gradients of dense's backward pass over a row-major
// [rows, units] matrix (the forward epilogue is fused into the kernels).
#pragma once

#include <cstddef>

#include "nn/json_fields.h"

namespace ringtrain::nn {

// The gradient before the activation. For relu it is written to `scratch` (dout masked
// where the output was not positive) and returned; for linear it is dout itself.
inline const float* ActivationBackward(const float* dout, const float* y, size_t n, Activation act,
                                       float* scratch) {
  if (act == Activation::kLinear) return dout;
  for (size_t i = 0; i < n; ++i) scratch[i] = y[i] > 0.0f ? dout[i] : 0.0f;
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

// ActivationBackward and BiasGrad in one pass over the data (bias_grad may be null).
// The pointers must not overlap (__restrict lets the compiler vectorise the fused loop).
inline const float* ActivationBiasBackward(const float* __restrict dout, const float* __restrict y, size_t rows,
                                           size_t units, Activation act, float* __restrict scratch,
                                           float* __restrict bias_grad) {
  if (act == Activation::kLinear) {
    if (bias_grad != nullptr) BiasGrad(dout, rows, units, bias_grad);
    return dout;
  }
  if (bias_grad == nullptr) return ActivationBackward(dout, y, rows * units, act, scratch);
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

}  // namespace ringtrain::nn
