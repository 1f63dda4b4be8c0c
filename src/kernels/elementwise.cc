// The portable elementwise kernels (plain loops) and the dispatch to AVX-512.
#include "kernels/elementwise.h"

#include "kernels/impl.h"

namespace ringtrain::kernels {
namespace portable {

void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    out[i] = !relu || v > 0.0f ? v : 0.0f;
  }
}

void AccumulateArray(float* acc, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) acc[i] += x[i];
}

void ReluMask(const float* dy, const float* y, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float d = dy[i];  // loaded unconditionally: the loop vectorises
    out[i] = y[i] > 0.0f ? d : 0.0f;
  }
}

void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    out[i] = y[i] > 0.0f ? v : 0.0f;
  }
}

}  // namespace portable

void AddArrays(const float* a, const float* b, size_t n, bool relu, float* out) {
  return UseAvx512() ? avx512::AddArrays(a, b, n, relu, out) : portable::AddArrays(a, b, n, relu, out);
}
void AccumulateArray(float* acc, const float* x, size_t n) {
  return UseAvx512() ? avx512::AccumulateArray(acc, x, n) : portable::AccumulateArray(acc, x, n);
}
void ReluMask(const float* dy, const float* y, size_t n, float* out) {
  return UseAvx512() ? avx512::ReluMask(dy, y, n, out) : portable::ReluMask(dy, y, n, out);
}

void AddArraysMasked(const float* a, const float* b, const float* y, size_t n, float* out) {
  return UseAvx512() ? avx512::AddArraysMasked(a, b, y, n, out) : portable::AddArraysMasked(a, b, y, n, out);
}

}  // namespace ringtrain::kernels
