// The transforms of Winograd F(4x4, 3x3) (avx512_winograd4.cc), called by the pass drivers
// in avx512_winograd.cc with the same layout as F(2x2, 3x3)'s: V[planes][tile][c],
// M[planes][tile][filters], U[planes][c][filters] (plane = 6 * row + column of the 6x6
// transformed tile). Internal to src/kernels; AVX-512 only; single-threaded, no errors.
#pragma once

#include "kernels/winograd.h"

namespace ringtrain::kernels::avx512::wino4 {

// V = B^T d B for the tiles [t0, t0 + nt) of example xn (zero outside the input).
void TransformInput(const Window& g, const WinogradPlan& p, const float* xn, int t0, int nt, float* v);
// U = G w G^T; w is [3, 3, c, f].
void TransformKernel(const float* w, int c, int f, float* u);
// y = A^T M A + bias (relu) for the tiles [t0, t0 + nt) of example yn; partial tiles store what exists.
void TransformOutput(const Window& g, const WinogradPlan& p, int filters, const float* mm, int t0, int nt,
                     const float* bias, bool relu, float* yn);
// dM = A dpre A^T (dpre = dy masked by y > 0 with relu, zero outside the output), writing
// dpre where asked and adding it to db in tile order where db is not null.
void TransformGradient(const Window& g, const WinogradPlan& p, int filters, const float* dyn, const float* yn,
                       bool relu, float* dpren, int t0, int nt, float* dm, float* db);
// dw = G^T dU G.
void TransformKernelGradient(const float* du, int c, int f, float* dw);

}  // namespace ringtrain::kernels::avx512::wino4
