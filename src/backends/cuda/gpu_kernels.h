// The CUDA kernels of the GPU engine: everything that is not a convolution (cuDNN) or
// a matrix product (cuBLAS). Each function enqueues its work on `stream` and returns
// the launch's error (cudaSuccess when enqueued); none synchronises or allocates.
// Layouts are the CPU's: row-major, channels-last (NHWC), HWIO conv kernels.
//
// Determinism: every reduction (bias gradients, loss sums, pooling gradients) runs in
// a fixed order, with no atomics, so the same inputs give the same bits every run.
// The per-element arithmetic is backends/cuda/device_math.h, written in the CPU's order with
// every product and sum rounded on its own (no FMA contraction), so the optimizer
// updates give exactly the CPU's bits and the rest agrees with the CPU to rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "kernels/kernels.h"

namespace ringtrain::gpu {

// y[r, c] = act(y[r, c] + bias[c]) over rows x cols (bias may be null): the epilogue of
// a dense GEMM (cols = units) or an NHWC convolution (rows = batch*out_h*out_w, cols = filters).
cudaError_t BiasActivationForward(float* y, const float* bias, int64_t rows, int cols, bool relu, cudaStream_t stream);

// dpre[r, c] = relu ? (y[r, c] > 0 ? dy[r, c] : 0) : dy[r, c]; db[c] = sum over r of
// dpre[r, c] (db may be null). dpre may equal dy. Up to 4,096 rows db is summed in row
// order (the CPU's bits); above that (convolutions) each column is cut into chunks of
// 128 rows, each summed in row order by its own thread into `partial` (at least
// BiasGradScratchFloats(rows, cols) floats), and the chunk sums are added in order by a
// second kernel: the same bits every run, within rounding of the CPU (device_math.h).
cudaError_t ActivationBiasBackward(const float* dy, const float* y, int64_t rows, int cols, bool relu, float* dpre,
                                   float* db, float* partial, cudaStream_t stream);
size_t BiasGradScratchFloats(int64_t rows, int cols);

// Conv kernel layouts: HWIO [kh, kw, c, f] (the model's) <-> OHWI [f, kh, kw, c]
// (cuDNN's NHWC filter layout, CUDNN_TENSOR_NHWC).
cudaError_t HwioToOhwi(const float* hwio, int kh, int kw, int c, int f, float* ohwi, cudaStream_t stream);
cudaError_t OhwiToHwio(const float* ohwi, int kh, int kw, int c, int f, float* hwio, cudaStream_t stream);

// Max pooling over NHWC x[batch, g.h, g.w, g.c] -> y[batch, g.out_h, g.out_w, g.c].
// argmax[i] = the index within the example's input of y[i]'s winning cell (ties: the
// first in row-major window order; cells outside the input never win), as the CPU does;
// -1 when the window's first cell is NaN (y is NaN and, as on the CPU, its gradient
// goes nowhere).
cudaError_t MaxPoolForward(const kernels::Window& g, const float* x, int batch, float* y, int32_t* argmax,
                           cudaStream_t stream);
// dx[batch, g.h, g.w, g.c] = for every input cell, the sum of the dy whose argmax is
// that cell, added in row-major output order (the CPU's order): overwrites dx.
cudaError_t MaxPoolBackward(const kernels::Window& g, const int32_t* argmax, const float* dy, int batch, float* dx,
                            cudaStream_t stream);

// ---------------------------------------------------------------- element-wise sums
// out[i] = a[i] + b[i], and 0 where mask[i] <= 0 when mask is not null (the executor's
// gradient sums; the CPU's AddArrays / AddArraysMasked bits). out may be a or b.
cudaError_t AddArrays(const float* a, const float* b, const float* mask, size_t n, float* out, cudaStream_t stream);
// acc[i] += x[i].
cudaError_t AccumulateArray(float* acc, const float* x, size_t n, cudaStream_t stream);

}  // namespace ringtrain::gpu
