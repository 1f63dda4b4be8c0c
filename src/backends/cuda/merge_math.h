// The per-element arithmetic of the CUDA kernels for Subtract, Average, Maximum and
// Minimum (backends/cuda/merge_kernels.cu). The kernels call these on the GPU;
// tests/gpu/merge_math_test.cc runs them in the kernels' loops on the host and compares
// the results with the CPU backend's kernels (backends/cpu/merge_kernels.cc).
//
// Each operation is rounded on its own, in the CPU's order: nvcc compiles the kernels
// with --fmad=false, host callers build without FMA contraction.
//
// Header-only, no CUDA dependency; every function is pure; any thread may call it.
#pragma once

#include <cstdint>

#if !defined(RT_HD)
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::merge {

// Subtract: y = a - b; the gradients are dy and -dy.
RT_HD inline float Subtract(float a, float b) { return a - b; }
RT_HD inline float Negate(float dy) { return -dy; }

// Average: the left-to-right sum (Add's chain) divided by the input count; every
// input's gradient is dy divided by the count.
RT_HD inline float DivideByCount(float v, int count) { return v / static_cast<float>(count); }

// Maximum (max true) and Minimum: whether input value v takes the running extreme
// `best` over: only when strictly beyond it, so the first input holding the extreme
// keeps it (TensorFlow's gradient of maximum(a, b) goes to a where a >= b) and a later
// NaN never wins.
RT_HD inline bool ExtremeTakes(float v, float best, bool max) { return max ? v > best : v < best; }

// One step of the running extreme: input k's value v against (*best, *at).
RT_HD inline void ExtremeStep(float v, int32_t k, bool max, float* best, int32_t* at) {
  const bool takes = ExtremeTakes(v, *best, max);
  *best = takes ? v : *best;
  *at = takes ? k : *at;
}

// Input k's gradient at an element whose extreme input is `winner`.
RT_HD inline float ExtremeGrad(float dy, int32_t winner, int32_t k) { return winner == k ? dy : 0.0f; }

}  // namespace ringtrain::gpu::merge
