// ReduceInOrder, instantiated per element type. The sum is built in a block that stays
// in L1, so a source may alias the output and the outputs are written once each; the
// ring's reduce-scatter (two sources, the first being the output) adds straight into
// the output instead, one pass, as it did before the routine was shared.
#include "collective/reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ringtrain::collective::internal {
namespace {

constexpr size_t kBlockBytes = 8192;

template <typename T>
void Add2(T* __restrict t, const T* __restrict a, const T* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<T>(a[i] + b[i]);
}

template <typename T>
void AddInto(T* __restrict t, const T* __restrict a, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<T>(t[i] + a[i]);
}

template <typename T>
void AddDivideInto(T* __restrict t, const T* __restrict a, T d, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] = (t[i] + a[i]) / d;
}

template <typename T>
void DivideBy(T* __restrict t, T d, size_t n) {
  for (size_t i = 0; i < n; ++i) t[i] /= d;
}

// T is float, double or an unsigned integer type (signed sums go through the unsigned
// type of their width: the same bits, with wrap-around defined).
template <typename T>
void Reduce(const void* const* sources, int n, size_t len, int divide_by, T* out, T* also_out) {
  constexpr bool kDivides = std::is_floating_point_v<T>;
  const bool divide = kDivides && divide_by > 0;
  auto src = [sources](int k) { return static_cast<const T*>(sources[k]); };
  if (n == 2 && src(0) == out && also_out == nullptr) {
    if (!divide) {
      AddInto(out, src(1), len);
    } else if constexpr (kDivides) {
      AddDivideInto(out, src(1), static_cast<T>(divide_by), len);
    }
    return;
  }
  constexpr size_t kBlock = kBlockBytes / sizeof(T);
  alignas(64) T block[kBlock];
  for (size_t at = 0; at < len; at += kBlock) {
    const size_t m = std::min(kBlock, len - at);
    if (n == 1) {
      std::memcpy(block, src(0) + at, m * sizeof(T));
    } else {
      Add2(block, src(0) + at, src(1) + at, m);
      for (int k = 2; k < n; ++k) AddInto(block, src(k) + at, m);
    }
    if constexpr (kDivides) {
      if (divide) DivideBy(block, static_cast<T>(divide_by), m);
    }
    std::memcpy(out + at, block, m * sizeof(T));
    if (also_out != nullptr) std::memcpy(also_out + at, block, m * sizeof(T));
  }
}

template <typename T>
void ReduceAs(const void* const* srcs, int n, size_t count, int divide_by, void* out, void* also_out) {
  Reduce(srcs, n, count, divide_by, static_cast<T*>(out), static_cast<T*>(also_out));
}

}  // namespace

void ReduceInOrder(DataType type, const void* const* srcs, int n, size_t count, int divide_by, void* out,
                   void* also_out) {
  switch (type) {
    case DataType::kFloat32: return ReduceAs<float>(srcs, n, count, divide_by, out, also_out);
    case DataType::kFloat64: return ReduceAs<double>(srcs, n, count, divide_by, out, also_out);
    case DataType::kInt32: return ReduceAs<uint32_t>(srcs, n, count, divide_by, out, also_out);
    case DataType::kInt64: return ReduceAs<uint64_t>(srcs, n, count, divide_by, out, also_out);
    case DataType::kUint8: return ReduceAs<uint8_t>(srcs, n, count, divide_by, out, also_out);
  }
}

}  // namespace ringtrain::collective::internal
