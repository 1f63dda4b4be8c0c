// Elementwise kernels over float arrays for the graph's glue (residual sums, Add, the
// relu mask). Additions only, one per element, so both implementations (AVX-512 and
// plain loops) give the same bits on every CPU. One thread (the caller's); no
// allocation; the arrays may not overlap except where said.
#pragma once

#include <cstddef>

namespace ringtrain::kernels {

// out[i] = a[i] + b[i]; with relu, values that are not > 0 become 0 (NaN too), as
// Keras' relu. out may be a or b.
void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out);
// acc[i] += x[i].
void AccumulateArray(float* acc, const float* x, size_t n);
// out[i] = y[i] > 0 ? dy[i] : 0 (the relu's gradient from its output y).
void ReluMask(const float* dy, const float* y, size_t n, float* out);
// out[i] = y[i] > 0 ? a[i] + b[i] : 0: ReluMask of AddArrays' sum, the same bits in one
// pass (a gradient summed over two consumers, then through a fused relu). out may be a or b.
void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out);

// The two implementations behind the functions above (same contracts).
#define RINGTRAIN_ELEMENTWISE_DECLS                                              \
  void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out); \
  void AccumulateArray(float* acc, const float* x, size_t n);                     \
  void ReluMask(const float* dy, const float* y, size_t n, float* out);         \
  void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out);
namespace portable {
RINGTRAIN_ELEMENTWISE_DECLS
}  // namespace portable
namespace avx512 {
RINGTRAIN_ELEMENTWISE_DECLS
}  // namespace avx512
#undef RINGTRAIN_ELEMENTWISE_DECLS

}  // namespace ringtrain::kernels
