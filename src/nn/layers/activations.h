// Keras' activation functions, elementwise over float32 rows (softmax: over each row
// of `units`, Keras' default last axis). Pure functions: no allocation, no state, any
// thread; the same inputs give the same bits (one pass in a fixed order).
//
// Dense and Conv2D keep relu fused into their kernels (nn/layers/activation.h); every other
// activation runs here after the linear part, and Backward takes both the
// pre-activation x and the output y (each kind reads the one it needs).
#pragma once

#include <cstddef>

#include "nn/keras/json_fields.h"
#include "ops/op.h"

namespace ringtrain::nn {

// Keras' name of the activation ("relu", "gelu", ...), for messages and summaries.
using ::ringtrain::ops::ActivationName;

// y = act(x) over rows x units floats. `y` may be `x` (in place).
void ActivationForward(Activation act, const float* x, size_t rows, size_t units, float* y);

// dx = dout * act'(x), from the pre-activation x and the output y of the same Forward.
// `dx` may be `dout`; it must not be x or y.
void ActivationBackwardInto(Activation act, const float* dout, const float* x, const float* y, size_t rows,
                            size_t units, float* dx);

}  // namespace ringtrain::nn
