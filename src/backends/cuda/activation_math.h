// The per-element arithmetic of the GPU's activation functions (backends/cuda/activation_kernels.cu),
// as inline functions that compile for both the host and the device. The kernels call
// them on the GPU; tests/gpu/activation_math_test.cc calls the same functions on the
// host and compares them with the CPU (nn/layers/activations.cc and the ReLU / LeakyReLU
// layers of nn/layers/activation_layers.cc).
//
// Every function repeats the CPU's statements in its order of operations, each product
// and sum rounded on its own (nvcc builds the kernels with --fmad=false; host callers
// build with -ffp-contract=off), and calls the same single-precision functions as the
// CPU: expf, tanhf, erff, log1pf, expm1f (std::exp and friends of a float). On the host
// these are the C library's, so the host results are the CPU's bits; on the GPU they are
// CUDA's, within a few units in the last place of the host's.
//
// Softmax runs over each row with several lanes (threads) per row: lane l takes the
// row's elements l, l + lanes, l + 2 * lanes, ... in order, and the lanes' partial
// maxima and sums are combined by a fixed pairwise tree (TreeReduce). The CPU's max is
// the same value in any order; its sums (one pass in element order) differ from the
// tree's by rounding only. The order depends on the row length alone, so the bits are
// the same every run.
//
// Header-only, no CUDA dependency: include it from plain C++ as well as from .cu files.
// Everything here is a pure function of its arguments; any thread may call it.
#pragma once

#include <math.h>  // ::expf, ::tanhf, ::erff, ::log1pf, ::expm1f: declared __host__ __device__ by nvcc

#include <cstdint>

#include "ops/activation.h"
#include "ops/op.h"

#ifndef RT_HD
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::am {

using ops::Activation;

// Keras' constants, as nn/layers/activations.cc spells them.
constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
constexpr float kSeluScale = 1.0507009873554804934193349852946f;
constexpr float kLeakySlope = 0.2f;
constexpr float kSqrtHalf = 0.70710678118654752440f;     // 1/sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;   // 1/sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

// std::max(m, v) and std::min(m, v) of floats: the first argument unless the other
// compares larger (smaller), so a NaN second argument is ignored and a NaN first one kept.
RT_HD inline float MaxOf(float m, float v) { return m < v ? v : m; }
RT_HD inline float MinOf(float m, float v) { return v < m ? v : m; }
RT_HD inline float SumOf(float a, float b) { return a + b; }
// The same as function objects, for TreeReduce and the kernels' reductions.
struct MaxOp {
  RT_HD float operator()(float m, float v) const { return MaxOf(m, v); }
};
struct SumOp {
  RT_HD float operator()(float a, float b) const { return SumOf(a, b); }
};

RT_HD inline float Sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
// log(1 + e^x) without overflow.
RT_HD inline float Softplus(float x) { return x > 0.0f ? x + ::log1pf(::expf(-x)) : ::log1pf(::expf(x)); }

// ---------------------------------------------------------------- element-wise functions
// y = act(x) for every activation but softmax (a row function, below); linear is x.
RT_HD inline float Forward(Activation act, float x) {
  switch (act) {
    case Activation::kLinear:
    case Activation::kSoftmax:  // not element-wise: SoftmaxLane* below
      return x;
    case Activation::kRelu:
      return x > 0.0f ? x : 0.0f;
    case Activation::kRelu6:
      return MinOf(MaxOf(x, 0.0f), 6.0f);
    case Activation::kSigmoid:
      return Sigmoid(x);
    case Activation::kTanh:
      return ::tanhf(x);
    case Activation::kGelu:  // Keras' gelu(approximate=False): x * Phi(x)
      return 0.5f * x * (1.0f + ::erff(x * kSqrtHalf));
    case Activation::kGeluTanh:  // gelu(approximate=True)
      return 0.5f * x * (1.0f + ::tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
    case Activation::kSwish:
      return x * Sigmoid(x);
    case Activation::kElu:
      return x > 0.0f ? x : ::expm1f(x);
    case Activation::kSelu:
      return kSeluScale * (x > 0.0f ? x : kSeluAlpha * ::expm1f(x));
    case Activation::kLeakyRelu:
      return x > 0.0f ? x : kLeakySlope * x;
    case Activation::kSoftplus:
      return Softplus(x);
    case Activation::kSoftsign:
      return x / (1.0f + ::fabsf(x));
    case Activation::kMish:
      return x * ::tanhf(Softplus(x));
    case Activation::kExponential:
      return ::expf(x);
  }
  return x;
}

// What the backward of `act` reads besides dy: the pre-activation x, the output y.
// A kernel loads only these (the other pointer may be null or stale).
RT_HD constexpr bool BackwardReadsX(Activation act) {
  return act == Activation::kRelu6 || act == Activation::kGelu || act == Activation::kGeluTanh ||
         act == Activation::kSwish || act == Activation::kElu || act == Activation::kSelu ||
         act == Activation::kLeakyRelu || act == Activation::kSoftplus || act == Activation::kSoftsign ||
         act == Activation::kMish;
}
RT_HD constexpr bool BackwardReadsY(Activation act) {
  return act == Activation::kRelu || act == Activation::kSigmoid || act == Activation::kTanh ||
         act == Activation::kSoftmax || act == Activation::kElu || act == Activation::kSelu ||
         act == Activation::kExponential;
}

// dx = dy * act'(x) for every activation but softmax, from the pre-activation x and the
// output y of the same forward (each reads what BackwardReads* says); linear is dy.
RT_HD inline float Backward(Activation act, float dy, float x, float y) {
  switch (act) {
    case Activation::kLinear:
    case Activation::kSoftmax:  // not element-wise: SoftmaxLaneGrad below
      return dy;
    case Activation::kRelu:
      return y > 0.0f ? dy : 0.0f;
    case Activation::kRelu6:  // TensorFlow's Relu6Grad: 1 on (0, 6)
      return x > 0.0f && x < 6.0f ? dy : 0.0f;
    case Activation::kSigmoid:
      return dy * y * (1.0f - y);
    case Activation::kTanh:
      return dy * (1.0f - y * y);
    case Activation::kGelu: {
      const float cdf = 0.5f * (1.0f + ::erff(x * kSqrtHalf));
      return dy * (cdf + x * kInvSqrt2Pi * ::expf(-0.5f * x * x));
    }
    case Activation::kGeluTanh: {
      const float t = ::tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
      const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
      return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
    }
    case Activation::kSwish: {
      const float s = Sigmoid(x);
      return dy * (s * (1.0f + x * (1.0f - s)));
    }
    case Activation::kElu:
      return x > 0.0f ? dy : dy * (y + 1.0f);
    case Activation::kSelu:
      return x > 0.0f ? dy * kSeluScale : dy * (y + kSeluScale * kSeluAlpha);
    case Activation::kLeakyRelu:
      return x > 0.0f ? dy : dy * kLeakySlope;
    case Activation::kSoftplus:
      return dy * Sigmoid(x);
    case Activation::kSoftsign: {
      const float d = 1.0f + ::fabsf(x);
      return dy / (d * d);
    }
    case Activation::kMish: {
      const float t = ::tanhf(Softplus(x));
      return dy * (t + x * Sigmoid(x) * (1.0f - t * t));
    }
    case Activation::kExponential:
      return dy * y;
  }
  return dy;
}

// ---------------------------------------------------------------- ReLU and LeakyReLU layers
// Keras' relu with the layers' arguments (ops::Op::Relu, generic):
// y = min(x > threshold ? x : 0, max_value) + negative_slope * (x - threshold) where x < threshold.
RT_HD inline float ReluMax(const ops::Op::Relu& r) { return r.has_max ? r.max_value : INFINITY; }

RT_HD inline float GenericReluForward(const ops::Op::Relu& r, float x) {
  const float max_value = ReluMax(r);
  const float pos = MinOf(x > r.threshold ? x : 0.0f, max_value);
  return x < r.threshold ? pos + r.negative_slope * (x - r.threshold) : pos;
}

// The leaky path of the backward (TensorFlow's LeakyReluGrad: the slope at 0 too): no
// max_value, threshold 0 and a slope.
RT_HD inline bool GenericReluIsLeaky(const ops::Op::Relu& r) {
  return !r.has_max && r.threshold == 0.0f && r.negative_slope != 0.0f;
}

RT_HD inline float GenericReluBackward(const ops::Op::Relu& r, float dy, float x) {
  if (GenericReluIsLeaky(r)) return x > 0.0f ? dy : dy * r.negative_slope;
  const float max_value = ReluMax(r);
  float g = x > r.threshold && x < max_value ? 1.0f : 0.0f;
  if (x < r.threshold) g += r.negative_slope;
  return dy * g;
}

// ---------------------------------------------------------------- softmax over rows
// Lanes per row: a warp for rows up to kSoftmaxWarpMaxUnits, a block of
// kSoftmaxBlockLanes threads for longer ones. Powers of two (TreeReduce).
constexpr int kSoftmaxWarpLanes = 32;
constexpr int kSoftmaxBlockLanes = 256;
constexpr int64_t kSoftmaxWarpMaxUnits = 1024;

RT_HD inline int SoftmaxLanes(int64_t units) {
  return units <= kSoftmaxWarpMaxUnits ? kSoftmaxWarpLanes : kSoftmaxBlockLanes;
}

// Lane `lane` of `lanes` over one row of `units`: the maximum of its elements (from
// -inf, as std::max; every element equal on the CPU's first value or larger ends the same).
RT_HD inline float SoftmaxLaneMax(const float* x, int64_t units, int lane, int lanes) {
  float m = -INFINITY;
  for (int64_t u = lane; u < units; u += lanes) m = MaxOf(m, x[u]);
  return m;
}

// y[u] = exp(x[u] - m) for the lane's elements; returns their sum in element order from
// 0. y may be x (each element is read and written by its own lane).
RT_HD inline float SoftmaxLaneExp(const float* x, float m, int64_t units, int lane, int lanes, float* y) {
  float sum = 0.0f;
  for (int64_t u = lane; u < units; u += lanes) {
    const float e = ::expf(x[u] - m);
    y[u] = e;
    sum += e;
  }
  return sum;
}

// The CPU's 1 / sum, then y[u] *= inv for the lane's elements.
RT_HD inline float SoftmaxInverse(float sum) { return 1.0f / sum; }
RT_HD inline void SoftmaxLaneScale(float inv, int64_t units, int lane, int lanes, float* y) {
  for (int64_t u = lane; u < units; u += lanes) y[u] *= inv;
}

// The backward, dx = y * (dy - sum(dy * y)): the lane's part of the sum, in element order from 0.
RT_HD inline float SoftmaxLaneDot(const float* dy, const float* y, int64_t units, int lane, int lanes) {
  float dot = 0.0f;
  for (int64_t u = lane; u < units; u += lanes) dot += dy[u] * y[u];
  return dot;
}

// dx[u] = y[u] * (dy[u] - dot) for the lane's elements; dx may be dy.
RT_HD inline void SoftmaxLaneGrad(const float* dy, const float* y, float dot, int64_t units, int lane, int lanes,
                                  float* dx) {
  for (int64_t u = lane; u < units; u += lanes) dx[u] = y[u] * (dy[u] - dot);
}

// The lanes' partial results combined: for stride = lanes / 2, lanes / 4, ..., 1,
// v[i] = op(v[i], v[i + stride]) for i < stride; returns v[0]. The GPU does the same
// steps in shared memory (strides of 32 and more) and with warp shuffles (below 32).
// `lanes` is a power of two; v is overwritten.
template <typename Op>
RT_HD inline float TreeReduce(float* v, int lanes, Op op) {
  for (int stride = lanes / 2; stride > 0; stride /= 2) {
    for (int i = 0; i < stride; ++i) v[i] = op(v[i], v[i + stride]);
  }
  return v[0];
}

}  // namespace ringtrain::gpu::am
