// The two implementations behind kernels.h (internal: only dispatch.cc and the tests
// include this). Each namespace has the same functions with the same contracts.
#pragma once

#include "kernels/kernels.h"

namespace ringtrain::kernels {

#define RINGTRAIN_KERNEL_DECLS                                                                                     \
  void DenseForward(const float* x, int batch, int in, const float* w, int units, const float* bias, bool relu,   \
                    float* y);                                                                                     \
  void DenseWeightGrad(const float* x, const float* d, int batch, int in, int units, float* dw);                   \
  void DenseInputGrad(const float* d, const float* w, int batch, int in, int units, float* dx, float* scratch);    \
  void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,     \
                   bool relu, float* y, float* scratch);                                                           \
  void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,   \
                      bool relu, float* dw, float* db, float* dpre, float* scratch);                               \
  void MaxPoolForward(const Window& g, const float* x, int batch, float* y);                                       \
  void MaxPoolBackward(const Window& g, const float* x, const float* y, const float* dy, int batch, float* dx);

namespace avx512 {
RINGTRAIN_KERNEL_DECLS
// The input gradient of a stride-1 convolution as a convolution itself: dpre (zero-padded
// by kh - 1 - pad_top rows above, ...) with the kernel flipped and transposed to [kh, kw,
// filters, c], through ConvForward's register tiles. scratch: ConvInputGradScratch.
// ConvFilterGrad; with `padded_ready` the padded copy of x (PadInput's) is already at the
// start of scratch, as ConvForward left it.
void ConvFilterGradImpl(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch, bool padded_ready);
void ConvInputGradStride1(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                          float* scratch);
// The input gradient of a strided convolution, split by the parity of the input cell
// (its row and column modulo the strides): each class is a stride-1 convolution of the
// zero-padded dpre with a sub-kernel of w (flipped and transposed), through ConvForward's
// tiles, written to every stride-th cell of dx. Each cell of dx is written once (no
// scatter-add): the same bits whatever the thread count. scratch: ConvInputGradScratch.
void ConvInputGradStrided(const Window& g, int filters, const float* dpre, const float* w, int batch, float* dx,
                          float* scratch);
}  // namespace avx512

namespace portable {
RINGTRAIN_KERNEL_DECLS
}  // namespace portable

#undef RINGTRAIN_KERNEL_DECLS

// Shared by both: scratch sizes, the input gradient of a convolution (im2col + sgemm),
// and the zero-padded copy the AVX-512 convolution reads.
size_t PaddedInputSize(const Window& g, int batch);
// The padded extents PadInput uses, without copying: the padded buffer (or x itself
// when no padding is needed).
const float* PaddedView(const Window& g, const float* x, const float* padded, int* padded_h, int* padded_w);
// Copies x into a zero-padded [batch, out_h*stride_h + kh - stride_h, ...] buffer so
// every window lies inside it. Returns x itself when no padding is needed.
const float* PadInput(const Window& g, const float* x, int batch, float* padded, int* padded_h, int* padded_w);

// The transposed convolution ConvInputGradStride1 runs: dpre as the input, dx the output.
Window TransposedStride1(const Window& g, int filters);
// The zero-padded copy of dpre ConvInputGradStrided reads: `top` rows and `left` columns
// of zeros before dpre, h x w cells in all.
struct StridedPadding {
  int top, left, h, w;
};
StridedPadding StridedInputGradPadding(const Window& g);

// True where the AVX-512 implementation runs (the CPU has it and it is not disabled).
bool UseAvx512();
// Forces the portable implementation on or off (the executable: RINGTRAIN_KERNELS=portable; tests).
void SetForcePortable(bool force);

}  // namespace ringtrain::kernels
