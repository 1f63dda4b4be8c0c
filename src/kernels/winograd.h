// Winograd F(2x2, 3x3) and F(4x4, 3x3) convolution (Lavin & Gray 2016) for the AVX-512
// implementation: 3x3 kernels, stride 1, dilation 1, one group. Internal to src/kernels.
//
// Each output tile of m x m pixels (m = 2 or 4) reads an a x a input tile (a = m + 2);
// per tile and channel the input is transformed (V = B^T d B), per channel and filter the
// kernel (U = G g G^T), the a*a transformed planes are multiplied as a*a small matrix
// products (tiles x c by c x filters) and the result is transformed back (y = A^T M A).
// F(4x4, 3x3) does 36 products per 16 outputs (F(2x2, 3x3): 16 per 4), 1.78x fewer
// multiply-adds, and moves 44% less transformed data per output; its transforms have
// larger coefficients (points 0, +-1, +-2, inf) and so a few times F(2,3)'s rounding error.
// Tiles are processed in blocks (a run of consecutive tiles, which may span examples: small
// planes fill a block from several examples) whose transformed data stays in L2.
//
// Work is split into a fixed number of slots (WinogradPlan::slots, set by the shape and
// batch, independent of the thread count); each slot walks its blocks in order, and the filter gradient adds the
// slots' partial sums in slot order: the same bits for any thread count.
//
// The planning functions here are plain C++ (callable on any CPU); the passes live in
// avx512_winograd.cc (drivers, products, F(2,3) transforms) and avx512_winograd4.cc (F(4,3)
// transforms) and run only where UseAvx512().
#pragma once

#include <cstddef>
#include <string_view>

#include "kernels/kernels.h"

namespace ringtrain::kernels {

// The convolution algorithm, process-wide (default auto; the executable sets it from
// RINGTRAIN_CONV_ALGO=direct|winograd|winograd2|winograd4|auto before any command runs).
// winograd: Winograd wherever it applies, with the tile auto would pick (F(2,3) where auto
// keeps the direct tiles); winograd2 / winograd4: F(2x2, 3x3) / F(4x4, 3x3) wherever
// Winograd applies. Tests may override it.
enum class ConvAlgo { kAuto, kDirect, kWinograd, kWinograd2, kWinograd4 };
void SetConvAlgo(ConvAlgo algo);  // kAuto: the default again
ConvAlgo CurrentConvAlgo();
// "direct", "winograd", "winograd2", "winograd4" as an algorithm; kAuto for anything else.
ConvAlgo ParseConvAlgo(std::string_view name);

enum class ConvPass { kForward, kFilterGrad };

// The geometry Winograd handles: 3x3, stride 1, dilation 1.
bool WinogradApplies(const Window& g);
// The output tile size (2 or 4) the AVX-512 implementation runs `pass` of this convolution
// with, 0 for the direct tiles (the algorithm switch and, for auto, what measured fastest).
// The input gradient runs as the forward pass of TransposedStride1(g, filters).
int WinogradTile(const Window& g, int filters, ConvPass pass);
inline bool UseWinograd(const Window& g, int filters, ConvPass pass) { return WinogradTile(g, filters, pass) != 0; }

struct WinogradPlan {
  int m = 0, alpha = 0, planes = 0;         // output tile m x m, input tile alpha x alpha, alpha^2 planes
  int tiles_h = 0, tiles_w = 0, tiles = 0;  // output tiles per example
  int block = 0;                            // tiles per block (consecutive over the batch; the last may be shorter)
  int units = 0;                            // blocks: ceil(batch * tiles / block)
  int slots = 0;                            // fixed partition of the units
  // Per slot: V[planes][block][c] and M[planes][block][filters], each plane padded to an
  // odd number of cache lines so that the planes do not all fall on the same L1 sets (4 KB aliasing).
  size_t v_plane = 0, m_plane = 0;
  size_t v_floats = 0, m_floats = 0;
  size_t u_floats = 0;  // the transformed kernel (or its gradient): planes * c * filters
};
// The plan for output tiles m x m (2 or 4).
WinogradPlan PlanWinograd(const Window& g, int filters, int batch, ConvPass pass, int m);

// Sizes for the tile WinogradTile picks (0 where it picks none).
size_t WinogradForwardScratch(const Window& g, int filters, int batch);
size_t WinogradFilterGradScratch(const Window& g, int filters, int batch);

namespace avx512 {
// The passes (kernels.h contracts of ConvForward and ConvFilterGrad) with the tile
// WinogradTile picks; scratch: the sizes above.
void WinogradForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                     bool relu, float* y, float* scratch);
void WinogradFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                        bool relu, float* dw, float* db, float* dpre, float* scratch);
}  // namespace avx512

}  // namespace ringtrain::kernels
