// AVX-512 dense passes. Compiled with -mavx512f -mfma; called only when the CPU has them.
//
// No packing: the batch dimension is small (tens of rows), so each pass streams the
// big weight matrix once in its natural layout while register tiles of the small
// operands stay put. Every output element sums over its reduction dimension in
// index order, one fused multiply-add at a time, so tiles and threads do not change
// the bits.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512_microkernel.h"
#include "kernels/avx512_util.h"
#include "kernels/impl.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels::avx512 {
namespace {

constexpr int kMr = 6;    // forward: batch rows per tile
constexpr int kNv = 4;    // forward / weight grad: 16-float column vectors per tile
constexpr int kKc = 256;  // forward: reduction block (the weight block stays in L2)
constexpr int kKr = 6;    // weight grad: weight rows per tile

// A column stripe of up to kNv vectors starting at column n0.
struct Stripe {
  int nv;
  __mmask16 last;
};

Stripe StripeAt(int units, int n0) {
  const int cols = std::min(units - n0, 16 * kNv);
  const int nv = (cols + 15) / 16;
  return {nv, TailMask(cols - 16 * (nv - 1))};
}

}  // namespace

void DenseForward(const float* x, int batch, int in, const float* w, int units, const float* bias, bool relu,
                  float* y) {
  const int stripes = (units + 16 * kNv - 1) / (16 * kNv);
  const int mtiles = (batch + kMr - 1) / kMr;
  // Threads split the (stripe, row tile) pairs. A thread walks the reduction in blocks
  // and runs all of its tiles over each block, so the block of weights it reads stays
  // in L2 while every row tile uses it.
  ParallelFor(static_cast<int64_t>(stripes) * mtiles, [&](int64_t begin, int64_t end) {
    for (int k0 = 0; k0 < in; k0 += kKc) {
      const int kc = std::min(kKc, in - k0);
      for (int64_t t = begin; t < end; ++t) {
        const int n0 = static_cast<int>(t / mtiles) * 16 * kNv;
        const int m0 = static_cast<int>(t % mtiles) * kMr;
        const Stripe s = StripeAt(units, n0);
        // A(r, k) = x[m0 + r, k0 + k]; B = the weight rows k0.. of this stripe.
        PickMicroKernel(std::min(kMr, batch - m0), s.nv)(x + static_cast<size_t>(m0) * in + k0, in, 1,
                                                         w + static_cast<size_t>(k0) * units + n0, units, kc,
                                                         y + static_cast<size_t>(m0) * units + n0, units, s.last, k0 > 0);
      }
    }
    for (int64_t t = begin; t < end; ++t) {
      const int n0 = static_cast<int>(t / mtiles) * 16 * kNv;
      const int m0 = static_cast<int>(t % mtiles) * kMr;
      const Stripe s = StripeAt(units, n0);
      BiasActivationRows(y + static_cast<size_t>(m0) * units + n0, std::min(kMr, batch - m0), units, n0,
                         16 * s.nv - 16 + PopCount(s.last), bias, relu);
    }
  });
}

void DenseWeightGrad(const float* x, const float* d, int batch, int in, int units, float* dw) {
  const int stripes = (units + 16 * kNv - 1) / (16 * kNv);
  const int ktiles = (in + kKr - 1) / kKr;
  ParallelFor(static_cast<int64_t>(ktiles), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int k0 = static_cast<int>(t) * kKr;
      const int kr = std::min(kKr, in - k0);
      for (int s0 = 0; s0 < stripes; ++s0) {
        const int n0 = s0 * 16 * kNv;
        const Stripe s = StripeAt(units, n0);
        // A(r, m) = x[m, k0 + r]; B = d's rows; the reduction runs over the batch.
        PickMicroKernel(kr, s.nv)(x + k0, 1, in, d + n0, units, batch, dw + static_cast<size_t>(k0) * units + n0, units,
                                  s.last, false);
      }
    }
  });
}

// dx[m, k] = sum_u d[m, u] w[k, u]. Computed transposed, 16 weight rows at a time:
// dx^T[k, m] = W[k, :] d^T with the micro-kernel (A = weight rows, B = d^T's rows of
// up to 64 batch columns), into a small buffer, then 16x16 register transposes store
// it as dx rows.
void DenseInputGrad(const float* d, const float* w, int batch, int in, int units, float* dx, float* scratch) {
  const int mpad = (batch + 15) / 16 * 16;
  float* dt = scratch;  // d^T [units, mpad], zero-padded columns
  for (int u = 0; u < units; ++u) {
    float* row = dt + static_cast<size_t>(u) * mpad;
    for (int m = 0; m < batch; ++m) row[m] = d[static_cast<size_t>(m) * units + u];
    for (int m = batch; m < mpad; ++m) row[m] = 0.0f;
  }
  const int kblocks = (in + 15) / 16;
  ParallelFor(kblocks, [&](int64_t begin, int64_t end) {
    alignas(64) float tile[16 * 64];  // dx^T for 16 weight rows x up to 64 batch columns
    for (float& v : tile) v = 0.0f;
    for (int64_t kb = begin; kb < end; ++kb) {
      const int k0 = static_cast<int>(kb) * 16;
      const int kr = std::min(16, in - k0);
      const __mmask16 kmask = TailMask(kr);
      for (int m0 = 0; m0 < mpad; m0 += 64) {
        const int nv = std::min(64, mpad - m0) / 16;
        for (int r0 = 0; r0 < kr; r0 += kMr) {
          PickMicroKernel(std::min(kMr, kr - r0), nv)(w + static_cast<size_t>(k0 + r0) * units, units, 1, dt + m0, mpad,
                                                      units, tile + r0 * 64, 64, TailMask(16), false);
        }
        for (int g = 0; g < nv; ++g) {
          __m512 acc[16];
          for (int r = 0; r < 16; ++r) acc[r] = _mm512_load_ps(tile + r * 64 + 16 * g);
          Transpose16x16(acc);  // acc[m] = dx[m0 + 16g + m, k0 .. k0 + 15]
          const int mr = std::min(16, batch - m0 - 16 * g);
          for (int m = 0; m < mr; ++m) {
            _mm512_mask_storeu_ps(dx + static_cast<size_t>(m0 + 16 * g + m) * in + k0, kmask, acc[m]);
          }
        }
      }
    }
  });
}

}  // namespace ringtrain::kernels::avx512
