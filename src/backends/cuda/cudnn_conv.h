// What the cuDNN convolution kernels (conv_kernel.cc, conv_transpose_kernel.cc) share:
// RAII owners of cuDNN's descriptors, the three algorithms a convolution runs with their
// workspace, and the rule for accepting one of cuDNN's heuristic choices (it runs here,
// is deterministic, and computes in FP32: FMA math, or DEFAULT math where that is FP32,
// before Ampere; never TF32).
//
// Header-only; the descriptors are not thread-safe (one kernel owns each).
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ringtrain::gpu::cudnn_conv {

// Owns one cuDNN descriptor; destroyed with `Destroy` (its status ignored: a destructor
// never fails).
template <typename T, cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (d_ != nullptr) (void)Destroy(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T* out() { return &d_; }
  T get() const { return d_; }

 private:
  T d_ = nullptr;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;

// The convolution's forward, input-gradient (backward data) and filter-gradient
// algorithms for one batch size, and the largest workspace of the three.
struct Algorithms {
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  size_t workspace = 0;
};

// One of cuDNN's heuristic results is acceptable: it runs, is deterministic and does not
// use TF32 (DEFAULT math counts as FP32 only where `default_math_is_fp32`).
template <typename Perf>
bool Acceptable(const Perf& p, bool default_math_is_fp32) {
  return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC &&
         (p.mathType == CUDNN_FMA_MATH || (default_math_is_fp32 && p.mathType == CUDNN_DEFAULT_MATH));
}

// The first of cuDNN's `found` heuristic results that is Acceptable; else the first that
// runs and is deterministic with DEFAULT math: some cuDNN versions report FP32
// algorithms as DEFAULT math whatever the descriptor asks, and the descriptor stays
// CUDNN_FMA_MATH, which is what the calls run with (no tensor cores, so no TF32). -1
// when there is none.
template <typename Perf>
int FirstAcceptable(const std::vector<Perf>& perf, int found, bool default_math_is_fp32) {
  const int n = std::min(found, static_cast<int>(perf.size()));
  for (int i = 0; i < n; ++i) {
    if (Acceptable(perf[i], default_math_is_fp32)) return i;
  }
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    if (p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC && p.mathType == CUDNN_DEFAULT_MATH) {
      return i;
    }
  }
  return -1;
}

}  // namespace ringtrain::gpu::cudnn_conv
