// Winograd planning: the algorithm switch, blocking and scratch sizes (plain C++, no
// AVX-512 instructions: conv_common.cc asks for the sizes on every CPU).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/winograd.h"

namespace ringtrain::kernels {
namespace {

constexpr int kSlots = 16;                 // work partition, fixed whatever the thread count
constexpr size_t kBlockFloats = 96 * 1024;  // V and M of one block: 384 KB, inside the 1 MB L2
constexpr size_t kPartialFloats = 4 << 20;  // the filter gradient's per-slot partial sums, all slots

ConvAlgo EnvAlgo() {
  const char* v = std::getenv("RINGTRAIN_CONV_ALGO");
  if (v == nullptr) return ConvAlgo::kAuto;
  if (std::strcmp(v, "direct") == 0) return ConvAlgo::kDirect;
  if (std::strcmp(v, "winograd") == 0) return ConvAlgo::kWinograd;
  if (std::strcmp(v, "winograd2") == 0) return ConvAlgo::kWinograd2;
  if (std::strcmp(v, "winograd4") == 0) return ConvAlgo::kWinograd4;
  return ConvAlgo::kAuto;
}

std::atomic<int> g_algo_override{-1};

}  // namespace

void SetConvAlgo(ConvAlgo algo) {
  g_algo_override.store(algo == ConvAlgo::kAuto ? -1 : static_cast<int>(algo), std::memory_order_relaxed);
}

ConvAlgo CurrentConvAlgo() {
  static const ConvAlgo env = EnvAlgo();
  const int forced = g_algo_override.load(std::memory_order_relaxed);
  return forced < 0 ? env : static_cast<ConvAlgo>(forced);
}

bool WinogradApplies(const Window& g) {
  return g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.out_h > 0 && g.out_w > 0 && g.c > 0;
}

namespace {

// The tile auto picks where it takes Winograd, 0 for the direct tiles.
int AutoTile(const Window& g, int filters, ConvPass pass) {
  (void)pass;
  // Measured on Zen 5 (batch 64 and 4, one thread): F(2,3) is 1.2x to 2.5x faster than
  // the direct tiles from 16 channels and filters (ResNet-20's 16/32/64, VGG16's 64 to
  // 256); few channels keep the direct tiles, and so does 512 x 512, where the transformed
  // kernel (16 MB) no longer stays in cache between blocks (1.1x to 2.3x slower).
  if (g.c < 16 || filters < 16 || static_cast<size_t>(g.c) * filters > 256 * 256) return 0;
  return 2;
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
  p.v_plane = static_cast<size_t>(p.block) * g.c + 16;
  p.m_plane = static_cast<size_t>(p.block) * filters + 16;
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
