// The per-element arithmetic of the CUDA kernels for Normalization
// (backends/cuda/normalization_kernels.cu), as the CPU kernel computes it
// (backends/cpu/normalization_kernel.cc). The kernels call these on the GPU;
// tests/gpu/normalization_math_test.cc runs them on the host against the CPU kernel.
// Each operation is rounded in float on its own (--fmad=false on the GPU; sqrt is IEEE's
// correctly rounded square root on both).
//
// Header-only, no CUDA dependency; every function is pure; any thread may call it.
#pragma once

#include <cmath>
#include <cstdint>

#if !defined(RT_HD)
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::normalization {

// The standard deviation's floor, as Keras' maximum(sqrt(variance), epsilon) and the
// CPU's std::max(sqrt(v), epsilon) (a NaN variance stays NaN).
RT_HD inline float Scale(float variance, float epsilon) {
  const float s = sqrtf(variance);
  return s < epsilon ? epsilon : s;
}

// The kept element of batch element i: index[i % size] with a table, else
// (i % size) % kept.
RT_HD inline int64_t KeptIndex(int64_t i, int64_t size, int64_t kept, const int32_t* index) {
  const int64_t j = i % size;
  return index != nullptr ? static_cast<int64_t>(index[j]) : j % kept;
}

// y = (x - mean) / scale, or mean + x * scale when inverted.
RT_HD inline float Normalize(float x, float mean, float scale, bool invert) {
  return invert ? mean + x * scale : (x - mean) / scale;
}

// dx = dy / scale, or dy * scale when inverted.
RT_HD inline float NormalizeGrad(float dy, float scale, bool invert) { return invert ? dy * scale : dy / scale; }

}  // namespace ringtrain::gpu::normalization
