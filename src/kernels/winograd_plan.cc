// Winograd planning: the algorithm switch, blocking and scratch sizes (plain C++, no
// AVX-512 instructions: conv_common.cc asks for the sizes on every CPU).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/logging.h"
#include "kernels/winograd.h"

namespace ringtrain::kernels {
namespace {

constexpr int kSlots = 16;                 // work partition, fixed whatever the thread count
constexpr size_t kBlockFloats = 96 * 1024;  // V and M of one block: 384 KB, inside the 1 MB L2
constexpr size_t kPartialFloats = 4 << 20;  // the filter gradient's per-slot partial sums, all slots

std::atomic<int> g_algo_override{-1};

}  // namespace

ConvAlgo ParseConvAlgo(std::string_view name) {
  if (name == "direct") return ConvAlgo::kDirect;
  if (name == "winograd") return ConvAlgo::kWinograd;
  if (name == "winograd2") return ConvAlgo::kWinograd2;
  if (name == "winograd4") return ConvAlgo::kWinograd4;
  return ConvAlgo::kAuto;
}

void SetConvAlgo(ConvAlgo algo) {
  g_algo_override.store(algo == ConvAlgo::kAuto ? -1 : static_cast<int>(algo), std::memory_order_relaxed);
}

ConvAlgo CurrentConvAlgo() {
  const int forced = g_algo_override.load(std::memory_order_relaxed);
  return forced < 0 ? ConvAlgo::kAuto : static_cast<ConvAlgo>(forced);
}

bool WinogradApplies(const Window& g) {
  return g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.out_h > 0 && g.out_w > 0 && g.c > 0;
}

namespace {

// n floats rounded up to an odd number of 64-byte lines: consecutive planes then fall on
// different L1 sets (a multiple of 4 KB apart, they would all alias).
size_t OddLines(size_t n) {
  const size_t lines = (n + 15) / 16;
  return 16 * (lines % 2 == 1 ? lines : lines + 1);
}

// The tile auto picks where it takes Winograd, 0 for the direct tiles.
int AutoTile(const Window& g, int filters, ConvPass pass) {
  (void)pass;
  // Measured on Zen 5 (batch 64 and 4, one thread): F(2,3) is 1.2x to 2.5x faster than
  // the direct tiles from 16 channels and filters (ResNet-20's 16/32/64, VGG16's 64 to
  // 256); few channels keep the direct tiles, and so does 512 x 512, where the transformed
  // kernel (16 MB) no longer stays in cache between blocks (1.1x to 2.3x slower).
  if (g.c < 16 || filters < 16 || static_cast<size_t>(g.c) * filters > 256 * 256) return 0;
  // F(4,3) (batch 64, one thread, ResNet-20's shapes): 1.3x to 1.4x faster than F(2,3) in
  // the forward pass (and so the input gradient) at 32x32x16, 16x16x32 and 8x8x64, and
  // in the filter gradient at 16 and 32 channels (about even at 64). Planes under 8x8 keep
  // F(2,3) (partial 4x4 tiles waste most of their products; at 2x2 to 6x6, batch 8,
  // F(4,3) measured 1.5x to 4x slower), and so do wide layers, where the 36 transformed
  // planes of the kernel (or of its gradient, which the filter gradient reads and writes
  // per block) no longer stay in L2 (14x14x256: F(4,3) 1.2x slower in the forward pass,
  // 1.4x in the filter gradient).
  if (g.out_h < 8 || g.out_w < 8) return 2;
  const size_t cf = static_cast<size_t>(g.c) * filters;
  if (cf > (pass == ConvPass::kFilterGrad ? 64 * 64 : 128 * 128)) return 2;
  return 4;
}

}  // namespace

int WinogradTile(const Window& g, int filters, ConvPass pass) {
  if (!WinogradApplies(g) || filters <= 0) return 0;
  switch (CurrentConvAlgo()) {
    case ConvAlgo::kDirect: return 0;
    case ConvAlgo::kWinograd2: return 2;
    case ConvAlgo::kWinograd4: return 4;
    case ConvAlgo::kWinograd: {
      const int tile = AutoTile(g, filters, pass);
      return tile == 0 ? 2 : tile;
    }
    case ConvAlgo::kAuto: break;
  }
  return AutoTile(g, filters, pass);
}

WinogradPlan PlanWinograd(const Window& g, int filters, int batch, ConvPass pass, int m) {
  WinogradPlan p;
  p.m = m;
  p.alpha = m + 2;
  p.planes = p.alpha * p.alpha;
  p.tiles_h = (g.out_h + m - 1) / m;
  p.tiles_w = (g.out_w + m - 1) / m;
  p.tiles = p.tiles_h * p.tiles_w;
  const size_t per_tile = static_cast<size_t>(p.planes) * (g.c + filters);
  const int fit = static_cast<int>(std::max<size_t>(12, kBlockFloats / per_tile));
  const int64_t all = static_cast<int64_t>(batch) * p.tiles;
  const int64_t blocks = (all + fit - 1) / fit;
  p.block = static_cast<int>((all + blocks - 1) / blocks);
  p.units = static_cast<int>((all + p.block - 1) / p.block);
  p.u_floats = static_cast<size_t>(p.planes) * g.c * filters;
  // The filter gradient keeps a partial dU (planes x c x filters) per slot: at most ~16 MB of them.
  int max_slots = kSlots;
  if (pass == ConvPass::kFilterGrad) {
    max_slots = static_cast<int>(std::clamp<size_t>(kPartialFloats / (p.u_floats + filters), 2, kSlots));
  }
  p.slots = std::max(1, std::min(p.units, max_slots));
  p.v_plane = OddLines(static_cast<size_t>(p.block) * g.c);
  p.m_plane = OddLines(static_cast<size_t>(p.block) * filters);
  p.v_floats = p.planes * p.v_plane;
  p.m_floats = p.planes * p.m_plane;
  return p;
}

size_t WinogradForwardScratch(const Window& g, int filters, int batch) {
  const int m = WinogradTile(g, filters, ConvPass::kForward);
  if (m == 0) return 0;
  const WinogradPlan p = PlanWinograd(g, filters, batch, ConvPass::kForward, m);
  return p.u_floats + p.slots * (p.v_floats + p.m_floats);
}

size_t WinogradFilterGradScratch(const Window& g, int filters, int batch) {
  const int m = WinogradTile(g, filters, ConvPass::kFilterGrad);
  if (m == 0) return 0;
  const WinogradPlan p = PlanWinograd(g, filters, batch, ConvPass::kFilterGrad, m);
  return p.slots * (p.v_floats + p.m_floats + p.u_floats + filters);
}

}  // namespace ringtrain::kernels
