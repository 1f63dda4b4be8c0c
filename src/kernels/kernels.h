// CPU compute kernels for the nn layers: dense and convolution passes with their bias
// and activation fused, max pooling, and the optimizers' element-wise updates.
//
// Two implementations sit behind every function: hand-written AVX-512 kernels, chosen
// at run time when the CPU has AVX-512F, and a portable one (OpenBLAS sgemm plus plain
// loops) for every other CPU. SetForcePortable forces the portable one
// (the executable does for RINGTRAIN_KERNELS=portable).
// Layouts are row-major and channels-last (NHWC), as everywhere in nn.
//
// Determinism: on one CPU kind, the same inputs give the same bits whatever the thread
// count: work is split over output elements only, and every reduction over the batch
// runs in a fixed order. The two implementations round differently (the AVX-512 one
// fuses multiply-adds), so results differ in the last bits between CPU kinds. The
// optimizer updates never fuse and give the same bits on every CPU, so replicas on
// mixed hardware stay identical.
//
// Threading: the kernels use the process-wide pool sized by SetNumThreads (1 by
// default). Calls must come from one thread at a time. Nothing here allocates per call
// beyond the scratch buffers the caller passes in.
#pragma once

#include <cstddef>
#include <string>

#include "ops/window.h"

namespace ringtrain::kernels {

// Threads the AVX-512 kernels split their work over (the caller's thread is one of
// them). The portable path runs OpenBLAS on one thread: its results depend on its
// thread count. n < 1 counts as 1.
void SetNumThreads(int n);
int NumThreads();
// "avx512" or "portable": what this process runs.
const char* Implementation();

// ---------------------------------------------------------------- dense
// y[batch, units] = act(x[batch, in] * w[in, units] + bias); bias may be null.
void DenseForward(const float* x, int batch, int in, const float* w, int units, const float* bias, bool relu,
                  float* y);
// dw[in, units] = x^T d  (overwrites).
void DenseWeightGrad(const float* x, const float* d, int batch, int in, int units, float* dw);
// dx[batch, in] = d w^T  (overwrites). scratch: DenseInputGradScratch(batch, units) floats.
void DenseInputGrad(const float* d, const float* w, int batch, int in, int units, float* dx, float* scratch);
size_t DenseInputGradScratch(int batch, int units);

// ---------------------------------------------------------------- 2-D windows
// The geometry of a convolution or pooling window (ops/window.h). Only the
// grouped/dilated and depthwise kernels below honour dilation; ConvForward and the
// pooling kernels need 1.
using Window = ::ringtrain::ops::Window;

// ---------------------------------------------------------------- conv2d
// y[batch, out_h, out_w, filters] = act(conv(x, w) + bias); w is HWIO
// [kh, kw, c, filters]; zero padding. scratch: ConvForwardScratch floats.
void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch);
// The Scratch sizes are those of the implementation running when they are asked (the
// portable one needs an im2col matrix, AVX-512 a padded copy at most).
size_t ConvForwardScratch(const Window& g, int filters, int batch);

// The filter and bias gradients: dpre = dy masked where y <= 0 when relu (y is the
// layer's output), dw[kh, kw, c, filters] = sum over batch and positions of x-patch x
// dpre, db = sum of dpre (db may be null). Also writes dpre to `dpre` when it is not
// null, for an input-gradient pass. scratch: ConvFilterGradScratch floats.
void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch);
size_t ConvFilterGradScratch(const Window& g, int filters, int batch);
// ConvFilterGrad where `scratch` (ConvFilterGradScratch floats) still starts with what
// ConvForward(g, filters, x, batch, ..., scratch) left in it: the same g, x and batch,
// the same implementation, and nothing written to scratch since. AVX-512 then reuses the
// forward's zero-padded copy of x instead of making it again. The same bits as ConvFilterGrad.
void ConvFilterGradAfterForward(const Window& g, int filters, const float* x, const float* y, const float* dy,
                                int batch, bool relu, float* dw, float* db, float* dpre, float* scratch);

// On AVX-512, 3x3 stride-1 convolutions (dilation 1) may run as Winograd F(2x2, 3x3) or
// F(4x4, 3x3) (kernels/winograd.h): all three passes, fewer multiply-adds, the same
// contracts and determinism, results within float rounding of the direct tiles (not the
// same bits; F(4,3) rounds about 10x more than F(2,3): ~5e-6 of the output's scale).
// SetConvAlgo (the executable: RINGTRAIN_CONV_ALGO) picks the algorithm:
//   auto (default): Winograd from 16 channels and 16 filters up to 256 x 256, where it
//     measured faster; F(4,3) on planes of 8x8 outputs or more with channels x filters up to
//     128 x 128 (64 x 64 in the filter gradient), F(2,3) elsewhere;
//   direct: the direct tiles; winograd: Winograd wherever it applies (auto's tile, F(2,3)
//     where auto keeps the direct tiles); winograd2 / winograd4: F(2,3) / F(4,3) wherever it applies.
// The scratch sizes follow the algorithm that will run.

// dx[batch, h, w, c] = the adjoint of the convolution applied to dpre. scratch:
// ConvInputGradScratch floats. sgemm + col2im, except on AVX-512 where stride 1 runs as
// the transposed convolution through ConvForward's tiles, 1x1 as Dense's input gradient,
// and larger strides as one stride-1 convolution per parity class of the input cells.
void ConvInputGrad(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                   float* scratch);
size_t ConvInputGradScratch(const Window& g, int filters, int batch);

// ---------------------------------------------------------------- grouped / dilated conv2d
// Keras Conv2D with groups and dilation_rate: w is [kh, kw, c / groups, filters]; output
// filter f belongs to group f / (filters / groups), which reads input channels
// [group * c / groups, (group + 1) * c / groups). im2col per group, then one sgemm per
// group (OpenBLAS on one thread: the same bits whatever the thread count). The caller
// applies the activation's gradient: `d` is the gradient before the activation.
// scratch: GroupedConvScratch floats for every pass.
void GroupedConvForward(const Window& g, int groups, int filters, const float* x, int batch, const float* w,
                        const float* bias, bool relu, float* y, float* scratch);
void GroupedConvFilterGrad(const Window& g, int groups, int filters, const float* x, const float* d, int batch,
                           float* dw, float* scratch);
void GroupedConvInputGrad(const Window& g, int groups, int filters, const float* d, const float* w, int batch,
                          float* dx, float* scratch);
size_t GroupedConvScratch(const Window& g, int groups, int batch);

// ---------------------------------------------------------------- depthwise conv2d
// Keras DepthwiseConv2D: w is [kh, kw, c, m]; output channel c * m + k is input channel
// c convolved with w[:, :, c, k] (channel-major, as Keras orders it). Direct loops over
// contiguous channels, no scratch; dilation honoured. Backward: `d` is the gradient
// before the activation; dw is overwritten, dx is overwritten.
void DepthwiseConvForward(const Window& g, int multiplier, const float* x, int batch, const float* w,
                          const float* bias, bool relu, float* y);
void DepthwiseConvFilterGrad(const Window& g, int multiplier, const float* x, const float* d, int batch, float* dw);
void DepthwiseConvInputGrad(const Window& g, int multiplier, const float* d, const float* w, int batch, float* dx);

// ---------------------------------------------------------------- max pooling
// Cells outside the input ('same' padding) are ignored. Ties go to the first cell in
// row-major window order, as TensorFlow's argmax does.
void MaxPoolForward(const Window& g, const float* x, int batch, float* y);
// dx = 0, then each dy goes to its window's maximal cell (x and y from the forward).
void MaxPoolBackward(const Window& g, const float* x, const float* y, const float* dy, int batch, float* dx);

// ---------------------------------------------------------------- optimizer updates
// Keras' update rules, elementwise, never fused, so every CPU gives the same bits.
void SgdUpdate(float* p, const float* g, size_t n, float lr);                 // p -= lr g
void SgdMomentumUpdate(float* p, float* v, const float* g, size_t n, float lr, float momentum, bool nesterov);
// m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2); p -= m alpha / (sqrt(v) + eps)
void AdamUpdate(float* p, float* m, float* v, const float* g, size_t n, float alpha, float one_minus_b1,
                float one_minus_b2, float eps);
// Adam with amsgrad: as AdamUpdate, then vhat = max(vhat, v) and p -= m alpha / (sqrt(vhat) + eps).
void AmsgradUpdate(float* p, float* m, float* v, float* vhat, const float* g, size_t n, float alpha,
                   float one_minus_b1, float one_minus_b2, float eps);

// Keras 3 RMSprop: velocity = rho velocity + (1 - rho) g^2; when average_gradient is not
// null (centered) a = rho a + (1 - rho) g and the denominator is velocity - a^2 + eps,
// else velocity + eps; increment = lr g / sqrt(denominator); when momentum (the buffer)
// is not null, mom = momentum mom + increment and p -= mom, else p -= increment.
struct RmspropScalars {
  float lr, rho, one_minus_rho, momentum, epsilon;
};
void RmspropUpdate(float* p, float* velocity, float* momentum, float* average_gradient, const float* g, size_t n,
                   const RmspropScalars& s);

// Keras 3 Adagrad: accumulator += g^2; p -= lr g / sqrt(accumulator + eps).
void AdagradUpdate(float* p, float* accumulator, const float* g, size_t n, float lr, float eps);

// Keras 3 Nadam, with the step's scalars computed by the caller:
//   m += (g - m)(1 - b1); v += (g^2 - v)(1 - b2)
//   m_hat = u_next m / (1 - u_product_next) + (1 - u) g / (1 - u_product); v_hat = v / (1 - b2^t)
//   p -= m_hat lr / (sqrt(v_hat) + eps)
struct NadamScalars {
  float lr, one_minus_b1, one_minus_b2, u_next, one_minus_u, one_minus_u_product, one_minus_u_product_next,
      one_minus_b2_power, epsilon;
};
void NadamUpdate(float* p, float* m, float* v, const float* g, size_t n, const NadamScalars& s);

// Keras 3 weight decay, before the update: p = p - p * weight_decay * lr.
void WeightDecay(float* p, size_t n, float weight_decay, float lr);
// Gradient clipping: dst = src * mul / div (clip by norm; div = 1 for a plain scale),
// dst = src clipped to [-limit, limit] (NaN stays NaN). dst may equal src.
void ScaleGradients(float* dst, const float* src, size_t n, float mul, float div);
void ClipByValue(float* dst, const float* src, size_t n, float limit);
// The sum of src^2 in double, the same bits whatever the thread count and CPU.
double SumSquares(const float* g, size_t n);

}  // namespace ringtrain::kernels
