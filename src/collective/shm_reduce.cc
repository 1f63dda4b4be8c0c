#include "collective/shm_reduce.h"

#include <algorithm>
#include <cstring>

namespace ringtrain::collective::shm {
namespace {

// The sum is built in a block that stays in L1, so a source may alias the output, and
// the two outputs are written once each. Plain loops over restrict pointers vectorise
// at -O2/-O3; no -ffast-math, so the additions happen exactly in the order written.
constexpr size_t kBlock = 2048;  // floats: 8 KiB

void Add2(float* __restrict t, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] = a[i] + b[i];
}

void AddInto(float* __restrict t, const float* __restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] += a[i];
}

void DivideBy(float* __restrict t, float d, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] /= d;
}

}  // namespace

void ReduceSum(const float* const* srcs, int n, size_t len, float divisor, float* out, float* also_out) {
  alignas(64) float block[kBlock];
  for (size_t at = 0; at < len; at += kBlock) {
    const size_t m = std::min(kBlock, len - at);
    if (n == 1) {
      std::memcpy(block, srcs[0] + at, m * sizeof(float));
    } else {
      Add2(block, srcs[0] + at, srcs[1] + at, m);
      for (int k = 2; k < n; ++k) AddInto(block, srcs[k] + at, m);
    }
    if (divisor != 0.0f) DivideBy(block, divisor, m);
    std::memcpy(out + at, block, m * sizeof(float));
    if (also_out != nullptr) std::memcpy(also_out + at, block, m * sizeof(float));
  }
}

}  // namespace ringtrain::collective::shm
