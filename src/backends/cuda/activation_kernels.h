// Keras' activation functions on the GPU, element-wise over a row-major [rows, units]
// matrix (softmax over each row, Keras' default last axis): the Activation op's kernel
// and the fused output activation of Dense and the convolutions. The per-element
// arithmetic is that of the CPU (src/nn/layers/activations.cc, activation_layers.cc),
// in backends/cuda/activation_math.h, unit-tested on the host.
//
// Every function only enqueues work on `stream` and returns cudaGetLastError() after
// its launches; rows * units may exceed 2^31.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/op.h"

namespace ringtrain::gpu {

// y = act(x); y may be x. `relu` carries the ReLU / LeakyReLU layers' arguments when
// relu.generic (else the plain function of `act`).
cudaError_t ActivationForward(ops::Activation act, const ops::Op::Relu& relu, const float* x, int64_t rows, int units,
                              float* y, cudaStream_t stream);

// dx = dy * act'(x), from the pre-activation x and the output y of the same forward
// (each function reads what the CPU's ActivationBackwardInto reads; x may be null for
// linear and relu). dx may be dy; it must not be x or y.
cudaError_t ActivationBackward(ops::Activation act, const ops::Op::Relu& relu, const float* dy, const float* x,
                               const float* y, int64_t rows, int units, float* dx, cudaStream_t stream);

}  // namespace ringtrain::gpu
