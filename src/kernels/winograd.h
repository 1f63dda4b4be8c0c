// Winograd F(2x2, 3x3) convolution (Lavin & Gray 2016) for the AVX-512 implementation:
// 3x3 kernels, stride 1, dilation 1, one group. Internal to src/kernels.
//
// Each output tile of 2x2 pixels reads a 4x4 input tile; per tile and channel the
// input is transformed (V = B^T d B), per channel and filter the kernel (U = G g G^T),
// the 16 transformed planes are multiplied as 16 small matrix products (tiles x c by
// c x filters) and the result is transformed back (y = A^T M A). Tiles are processed in
// blocks (a run of one example's tiles) whose transformed data stays in L2.
//
// Work is split into a fixed number of slots (WinogradPlan::slots, set by the shape and
// batch, independent of the thread count); each slot walks its blocks in order, and the filter gradient adds the
// slots' partial sums in slot order: the same bits for any thread count.
//
// The planning functions here are plain C++ (callable on any CPU); the passes live in
// avx512_winograd.cc and run only where UseAvx512().
#pragma once

#include <cstddef>

#include "kernels/kernels.h"

namespace ringtrain::kernels {

// RINGTRAIN_CONV_ALGO=direct|winograd|auto (read once; default auto). Tests may override it.
enum class ConvAlgo { kAuto, kDirect, kWinograd };
void SetConvAlgo(ConvAlgo algo);  // for tests; kAuto restores the environment's choice
ConvAlgo CurrentConvAlgo();

enum class ConvPass { kForward, kFilterGrad };

// The geometry Winograd F(2x2, 3x3) handles: 3x3, stride 1, dilation 1.
bool WinogradApplies(const Window& g);
// True where the AVX-512 implementation runs `pass` of this convolution through Winograd
// (the algorithm switch and, for auto, where it measured faster than the direct tiles).
// The input gradient runs as the forward pass of TransposedStride1(g, filters).
bool UseWinograd(const Window& g, int filters, ConvPass pass);

struct WinogradPlan {
  int tiles_h = 0, tiles_w = 0, tiles = 0;  // output tiles per example
  int block = 0;                            // tiles per block (the last block of an example may be shorter)
  int blocks_per_example = 0;
  int units = 0;                            // batch * blocks_per_example
  int slots = 0;                            // fixed partition of the units
  // Per slot: V[16][block][c] and M[16][block][filters], each plane padded by 16 floats
  // so that the 16 planes do not all fall on the same L1 sets (4 KB aliasing).
  size_t v_plane = 0, m_plane = 0;
  size_t v_floats = 0, m_floats = 0;
};
WinogradPlan PlanWinograd(const Window& g, int filters, int batch, ConvPass pass);

size_t WinogradForwardScratch(const Window& g, int filters, int batch);
size_t WinogradFilterGradScratch(const Window& g, int filters, int batch);

namespace avx512 {
// The passes (kernels.h contracts of ConvForward and ConvFilterGrad); scratch: the sizes above.
void WinogradForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                     bool relu, float* y, float* scratch);
void WinogradFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch);
}  // namespace avx512

}  // namespace ringtrain::kernels
