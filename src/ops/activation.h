// Keras' activation functions by kind, device-neutral: an op's fused output activation
// (Dense, Conv2D and the other layers with an "activation" argument) and the Activation
// op's function. backends/cpu/activations.h computes them on the CPU.
#pragma once

namespace ringtrain::ops {

enum class Activation {
  kLinear, kRelu, kRelu6, kSigmoid, kTanh, kSoftmax,
  kGelu,      // "gelu": Keras' default approximate=False, x * Phi(x)
  kGeluTanh,  // "gelu_new" (tfjs' name): the tanh approximation
  kSwish,     // "swish" / "silu"
  kElu,       // alpha 1
  kSelu,
  kLeakyRelu,  // Keras 3's activations.leaky_relu: negative_slope 0.2
  kSoftplus, kSoftsign, kMish, kExponential,
};

}  // namespace ringtrain::ops
