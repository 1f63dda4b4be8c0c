#include "backends/cpu/activations.h"

#include <algorithm>
#include <cmath>

namespace ringtrain::backends::cpu {
namespace {

// Keras' constants (keras.activations.selu, leaky_relu's default negative_slope).
constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
constexpr float kSeluScale = 1.0507009873554804934193349852946f;
constexpr float kLeakySlope = 0.2f;
constexpr float kSqrtHalf = 0.70710678118654752440f;     // 1/sqrt(2)
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;   // 1/sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // sqrt(2/pi)
constexpr float kGeluCubic = 0.044715f;

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// log(1 + e^x) without overflow.
inline float Softplus(float x) { return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

void SoftmaxRows(const float* x, size_t rows, size_t units, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * units;
    float* yr = y + r * units;
    float m = xr[0];
    for (size_t u = 1; u < units; ++u) m = std::max(m, xr[u]);
    float sum = 0.0f;
    for (size_t u = 0; u < units; ++u) {
      yr[u] = std::exp(xr[u] - m);
      sum += yr[u];
    }
    const float inv = 1.0f / sum;
    for (size_t u = 0; u < units; ++u) yr[u] *= inv;
  }
}

// dx = y * (dout - sum(dout * y)) per row.
void SoftmaxBackwardRows(const float* dout, const float* y, size_t rows, size_t units, float* dx) {
  for (size_t r = 0; r < rows; ++r) {
    const float* dr = dout + r * units;
    const float* yr = y + r * units;
    float* xr = dx + r * units;
    float dot = 0.0f;
    for (size_t u = 0; u < units; ++u) dot += dr[u] * yr[u];
    for (size_t u = 0; u < units; ++u) xr[u] = yr[u] * (dr[u] - dot);
  }
}

}  // namespace

void ActivationForward(Activation act, const float* x, size_t rows, size_t units, float* y) {
  const size_t n = rows * units;
  switch (act) {
    case Activation::kLinear:
      if (y != x) std::copy(x, x + n, y);
      return;
    case Activation::kRelu:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::kRelu6:
      for (size_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], 0.0f), 6.0f);
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) y[i] = Sigmoid(x[i]);
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    case Activation::kSoftmax:
      SoftmaxRows(x, rows, units, y);
      return;
    case Activation::kGelu:  // Keras' gelu(approximate=False): x * Phi(x)
      for (size_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kSqrtHalf));
      return;
    case Activation::kGeluTanh:  // gelu(approximate=True)
      for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
      }
      return;
    case Activation::kSwish:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] * Sigmoid(x[i]);
      return;
    case Activation::kElu:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : std::expm1(x[i]);
      return;
    case Activation::kSelu:
      for (size_t i = 0; i < n; ++i) y[i] = kSeluScale * (x[i] > 0.0f ? x[i] : kSeluAlpha * std::expm1(x[i]));
      return;
    case Activation::kLeakyRelu:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : kLeakySlope * x[i];
      return;
    case Activation::kSoftplus:
      for (size_t i = 0; i < n; ++i) y[i] = Softplus(x[i]);
      return;
    case Activation::kSoftsign:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::abs(x[i]));
      return;
    case Activation::kMish:
      for (size_t i = 0; i < n; ++i) y[i] = x[i] * std::tanh(Softplus(x[i]));
      return;
    case Activation::kExponential:
      for (size_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
      return;
  }
}

void ActivationBackwardInto(Activation act, const float* dout, const float* x, const float* y, size_t rows,
                            size_t units, float* dx) {
  const size_t n = rows * units;
  switch (act) {
    case Activation::kLinear:
      if (dx != dout) std::copy(dout, dout + n, dx);
      return;
    case Activation::kRelu:
      // Both loads unconditional, so GCC turns the select into a vector compare and mask
      // (with the load of dout under the condition it emits a scalar branch per element).
      for (size_t i = 0; i < n; ++i) {
        const float d = dout[i];
        dx[i] = y[i] > 0.0f ? d : 0.0f;
      }
      return;
    case Activation::kRelu6:  // TensorFlow's Relu6Grad: 1 on (0, 6)
      for (size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f && x[i] < 6.0f ? dout[i] : 0.0f;
      return;
    case Activation::kSigmoid:
      for (size_t i = 0; i < n; ++i) dx[i] = dout[i] * y[i] * (1.0f - y[i]);
      return;
    case Activation::kTanh:
      for (size_t i = 0; i < n; ++i) dx[i] = dout[i] * (1.0f - y[i] * y[i]);
      return;
    case Activation::kSoftmax:
      SoftmaxBackwardRows(dout, y, rows, units, dx);
      return;
    case Activation::kGelu:
      for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float cdf = 0.5f * (1.0f + std::erf(v * kSqrtHalf));
        dx[i] = dout[i] * (cdf + v * kInvSqrt2Pi * std::exp(-0.5f * v * v));
      }
      return;
    case Activation::kGeluTanh:
      for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
        const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
        dx[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner);
      }
      return;
    case Activation::kSwish:
      for (size_t i = 0; i < n; ++i) {
        const float s = Sigmoid(x[i]);
        dx[i] = dout[i] * (s * (1.0f + x[i] * (1.0f - s)));
      }
      return;
    case Activation::kElu:
      for (size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dout[i] : dout[i] * (y[i] + 1.0f);
      return;
    case Activation::kSelu:
      for (size_t i = 0; i < n; ++i) {
        dx[i] = x[i] > 0.0f ? dout[i] * kSeluScale : dout[i] * (y[i] + kSeluScale * kSeluAlpha);
      }
      return;
    case Activation::kLeakyRelu:
      for (size_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dout[i] : dout[i] * kLeakySlope;
      return;
    case Activation::kSoftplus:
      for (size_t i = 0; i < n; ++i) dx[i] = dout[i] * Sigmoid(x[i]);
      return;
    case Activation::kSoftsign:
      for (size_t i = 0; i < n; ++i) {
        const float d = 1.0f + std::abs(x[i]);
        dx[i] = dout[i] / (d * d);
      }
      return;
    case Activation::kMish:
      for (size_t i = 0; i < n; ++i) {
        const float t = std::tanh(Softplus(x[i]));
        dx[i] = dout[i] * (t + x[i] * Sigmoid(x[i]) * (1.0f - t * t));
      }
      return;
    case Activation::kExponential:
      for (size_t i = 0; i < n; ++i) dx[i] = dout[i] * y[i];
      return;
  }
}

}  // namespace ringtrain::backends::cpu
