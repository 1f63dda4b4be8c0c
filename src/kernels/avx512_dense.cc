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

// dx[m, k] = sum_u d[m, u] w[k, u]. Tiles of 16 weight rows x 16 batch rows: each
// accumulator holds one weight row's dot products for 16 batch rows (broadcast the
// weight, load a column of d^T), then a 16x16 transpose stores them as dx rows.
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
    for (int64_t kb = begin; kb < end; ++kb) {
      const int k0 = static_cast<int>(kb) * 16;
      const int kr = std::min(16, in - k0);
      const __mmask16 kmask = TailMask(kr);
      // Rows past the end repeat the last row; their results are not stored.
      const float* wr[16];
      for (int r = 0; r < 16; ++r) wr[r] = w + static_cast<size_t>(k0 + std::min(r, kr - 1)) * units;
      for (int m0 = 0; m0 < batch; m0 += 16) {
        // Sixteen named accumulators (an array would live on the stack, see
        // avx512_microkernel.h); accN holds weight row k0 + N's dot products.
        const __m512 z = _mm512_setzero_ps();
        __m512 acc0 = z, acc1 = z, acc2 = z, acc3 = z, acc4 = z, acc5 = z, acc6 = z, acc7 = z, acc8 = z, acc9 = z,
               acc10 = z, acc11 = z, acc12 = z, acc13 = z, acc14 = z, acc15 = z;
        const float* col = dt + m0;
        for (int u = 0; u < units; ++u, col += mpad) {
          const __m512 b = _mm512_loadu_ps(col);
#define RT_ACC(N) acc##N = _mm512_fmadd_ps(_mm512_set1_ps(wr[N][u]), b, acc##N);
          RT_ACC(0) RT_ACC(1) RT_ACC(2) RT_ACC(3) RT_ACC(4) RT_ACC(5) RT_ACC(6) RT_ACC(7)
          RT_ACC(8) RT_ACC(9) RT_ACC(10) RT_ACC(11) RT_ACC(12) RT_ACC(13) RT_ACC(14) RT_ACC(15)
#undef RT_ACC
        }
        __m512 acc[16] = {acc0, acc1, acc2,  acc3,  acc4,  acc5,  acc6,  acc7,
                          acc8, acc9, acc10, acc11, acc12, acc13, acc14, acc15};
        Transpose16x16(acc);  // acc[m] = dx[m0 + m, k0 .. k0 + 15]
        const int mr = std::min(16, batch - m0);
        for (int m = 0; m < mr; ++m) _mm512_mask_storeu_ps(dx + static_cast<size_t>(m0 + m) * in + k0, kmask, acc[m]);
      }
    }
  });
}

}  // namespace ringtrain::kernels::avx512
