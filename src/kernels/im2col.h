// im2col and its adjoint for the sgemm formulation of convolution (NHWC):
// cols[(n*OH + oh)*OW + ow, (i*KW + j)*C + c] = x[n, oh*sh - pad_top + i, ow*sw - pad_left + j, c],
// zero outside the input; cols is [batch*OH*OW, KH*KW*C], matching an HWIO kernel
// flattened to [KH*KW*C, F].
#pragma once

#include "kernels/kernels.h"

namespace ringtrain::kernels {

void Im2Col(const Window& g, const float* x, int batch, float* cols);
// dx = 0, then every cols entry is added back to the input cell it came from.
void Col2Im(const Window& g, const float* cols, int batch, float* dx);

}  // namespace ringtrain::kernels
