// The CUDA kernels behind backends/cuda/activation_kernels.h. The arithmetic of every
// element lives in backends/cuda/activation_math.h (unit-tested on the host against the
// CPU); this file only maps threads onto elements and rows.
//
// Conventions: 256 threads per block; grid-stride loops with 64-bit indices; a grid
// capped at kActMaxBlocks; an empty problem launches nothing. The element-wise kernels
// are instantiated per activation, so the function's switch folds away. Softmax takes
// one row per warp (rows up to am::kSoftmaxWarpMaxUnits) or per block (longer rows):
// each lane reduces its strided elements in order, and the lanes are combined by the
// pairwise tree of am::TreeReduce (shared memory for strides of 32 and more, warp
// shuffles below). No atomics: each output element is written by one thread and every
// sum runs in an order fixed by the row length, so the bits are the same every run.
#include "backends/cuda/activation_kernels.h"

#include <algorithm>

#include "backends/cuda/activation_math.h"

namespace ringtrain::gpu {
namespace {

using ops::Activation;

constexpr int kActThreads = 256;
constexpr int64_t kActMaxBlocks = 65536;
constexpr unsigned kFullWarp = 0xffffffffu;

unsigned ActBlocks(int64_t n) {
  return static_cast<unsigned>(std::min((n + kActThreads - 1) / kActThreads, kActMaxBlocks));
}

__device__ inline int64_t ActThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t ActStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------- element-wise

template <Activation A>
__global__ void ActForwardKernel(const float* x, int64_t n, float* y) {
  for (int64_t i = ActThread(); i < n; i += ActStride()) y[i] = am::Forward(A, x[i]);
}

template <Activation A>
__global__ void ActBackwardKernel(const float* dy, const float* x, const float* y, int64_t n, float* dx) {
  for (int64_t i = ActThread(); i < n; i += ActStride()) {
    const float xv = am::BackwardReadsX(A) ? x[i] : 0.0f;
    const float yv = am::BackwardReadsY(A) ? y[i] : 0.0f;
    dx[i] = am::Backward(A, dy[i], xv, yv);
  }
}

// ops::Op::Relu is trivially copyable and passed by value.
__global__ void GenericReluForwardKernel(ops::Op::Relu r, const float* x, int64_t n, float* y) {
  for (int64_t i = ActThread(); i < n; i += ActStride()) y[i] = am::GenericReluForward(r, x[i]);
}

__global__ void GenericReluBackwardKernel(ops::Op::Relu r, const float* dy, const float* x, int64_t n, float* dx) {
  for (int64_t i = ActThread(); i < n; i += ActStride()) dx[i] = am::GenericReluBackward(r, dy[i], x[i]);
}

template <Activation A>
cudaError_t LaunchForward(const float* x, int64_t n, float* y, cudaStream_t stream) {
  ActForwardKernel<A><<<ActBlocks(n), kActThreads, 0, stream>>>(x, n, y);
  return cudaGetLastError();
}

template <Activation A>
cudaError_t LaunchBackward(const float* dy, const float* x, const float* y, int64_t n, float* dx,
                           cudaStream_t stream) {
  if ((am::BackwardReadsX(A) && x == nullptr) || (am::BackwardReadsY(A) && y == nullptr)) {
    return cudaErrorInvalidValue;
  }
  ActBackwardKernel<A><<<ActBlocks(n), kActThreads, 0, stream>>>(dy, x, y, n, dx);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- softmax rows

// The tree's steps below 32 across a warp: lane i takes op(v_i, v_{i + stride}) for
// stride 16, 8, 4, 2, 1 (lanes at or past 32 - stride compute values nobody reads).
// Lane 0 ends with the tree's result.
template <typename Op>
__device__ inline float WarpTree(float v, Op op) {
#pragma unroll
  for (int stride = am::kSoftmaxWarpLanes / 2; stride > 0; stride /= 2) {
    v = op(v, __shfl_down_sync(kFullWarp, v, stride));
  }
  return v;
}

// am::TreeReduce over the kLanes lanes of one row's group, the result in every lane.
// kLanes == 32: the group is a warp. kLanes == blockDim.x: the group is the block, and
// `shared` holds kLanes floats; every thread of the block calls it.
template <int kLanes, typename Op>
__device__ inline float GroupReduce(float v, float* shared, Op op) {
  if constexpr (kLanes == am::kSoftmaxWarpLanes) {
    return __shfl_sync(kFullWarp, WarpTree(v, op), 0);
  } else {
    const int t = static_cast<int>(threadIdx.x);
    shared[t] = v;
    __syncthreads();
    for (int stride = kLanes / 2; stride >= am::kSoftmaxWarpLanes; stride /= 2) {
      if (t < stride) shared[t] = op(shared[t], shared[t + stride]);
      __syncthreads();
    }
    if (t < am::kSoftmaxWarpLanes) {
      const float w = WarpTree(shared[t], op);
      if (t == 0) shared[0] = w;
    }
    __syncthreads();
    const float result = shared[0];
    __syncthreads();  // every thread has read it before the next reduction writes
    return result;
  }
}

// Rows of the grid's groups: group g takes rows g, g + groups, ... (uniform per group,
// so every lane of a group runs the same reductions).
template <int kLanes>
struct RowGroups {
  int lane;
  int64_t first, stride;
  __device__ RowGroups() {
    const int64_t t = ActThread();
    lane = static_cast<int>(t % kLanes);
    first = t / kLanes;
    stride = ActStride() / kLanes;
  }
};

template <int kLanes>
__global__ void __launch_bounds__(kActThreads) SoftmaxForwardKernel(const float* x, int64_t rows, int units,
                                                                     float* y) {
  __shared__ float shared[kLanes == am::kSoftmaxWarpLanes ? 1 : kLanes];
  const RowGroups<kLanes> g;
  for (int64_t r = g.first; r < rows; r += g.stride) {
    const float* xr = x + r * units;
    float* yr = y + r * units;
    const float m = GroupReduce<kLanes>(am::SoftmaxLaneMax(xr, units, g.lane, kLanes), shared, am::MaxOp());
    const float sum =
        GroupReduce<kLanes>(am::SoftmaxLaneExp(xr, m, units, g.lane, kLanes, yr), shared, am::SumOp());
    am::SoftmaxLaneScale(am::SoftmaxInverse(sum), units, g.lane, kLanes, yr);
  }
}

template <int kLanes>
__global__ void __launch_bounds__(kActThreads) SoftmaxBackwardKernel(const float* dy, const float* y, int64_t rows,
                                                                      int units, float* dx) {
  __shared__ float shared[kLanes == am::kSoftmaxWarpLanes ? 1 : kLanes];
  const RowGroups<kLanes> g;
  for (int64_t r = g.first; r < rows; r += g.stride) {
    const float* dyr = dy + r * units;
    const float* yr = y + r * units;
    const float dot = GroupReduce<kLanes>(am::SoftmaxLaneDot(dyr, yr, units, g.lane, kLanes), shared, am::SumOp());
    am::SoftmaxLaneGrad(dyr, yr, dot, units, g.lane, kLanes, dx + r * units);
  }
}

static_assert(am::kSoftmaxBlockLanes == kActThreads, "a block-wide softmax row uses the whole block");
static_assert(kActThreads % am::kSoftmaxWarpLanes == 0, "whole warps per block");

unsigned SoftmaxBlocks(int64_t rows, int lanes) {
  const int64_t per_block = kActThreads / lanes;
  return static_cast<unsigned>(std::min((rows + per_block - 1) / per_block, kActMaxBlocks));
}

cudaError_t SoftmaxForward(const float* x, int64_t rows, int units, float* y, cudaStream_t stream) {
  const int lanes = am::SoftmaxLanes(units);
  if (lanes == am::kSoftmaxWarpLanes) {
    SoftmaxForwardKernel<am::kSoftmaxWarpLanes>
        <<<SoftmaxBlocks(rows, lanes), kActThreads, 0, stream>>>(x, rows, units, y);
  } else {
    SoftmaxForwardKernel<am::kSoftmaxBlockLanes>
        <<<SoftmaxBlocks(rows, lanes), kActThreads, 0, stream>>>(x, rows, units, y);
  }
  return cudaGetLastError();
}

cudaError_t SoftmaxBackward(const float* dy, const float* y, int64_t rows, int units, float* dx,
                            cudaStream_t stream) {
  if (y == nullptr) return cudaErrorInvalidValue;
  const int lanes = am::SoftmaxLanes(units);
  if (lanes == am::kSoftmaxWarpLanes) {
    SoftmaxBackwardKernel<am::kSoftmaxWarpLanes>
        <<<SoftmaxBlocks(rows, lanes), kActThreads, 0, stream>>>(dy, y, rows, units, dx);
  } else {
    SoftmaxBackwardKernel<am::kSoftmaxBlockLanes>
        <<<SoftmaxBlocks(rows, lanes), kActThreads, 0, stream>>>(dy, y, rows, units, dx);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t ActivationForward(ops::Activation act, const ops::Op::Relu& relu, const float* x, int64_t rows, int units,
                              float* y, cudaStream_t stream) {
  if (rows <= 0 || units <= 0) return cudaSuccess;
  const int64_t n = rows * units;
  if (relu.generic) {
    GenericReluForwardKernel<<<ActBlocks(n), kActThreads, 0, stream>>>(relu, x, n, y);
    return cudaGetLastError();
  }
#define RT_ACTIVATION_FORWARD_CASE(A) \
  case Activation::A:                 \
    return LaunchForward<Activation::A>(x, n, y, stream);
  switch (act) {
    case Activation::kLinear:
      if (y == x) return cudaSuccess;
      return cudaMemcpyAsync(y, x, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    case Activation::kSoftmax:
      return SoftmaxForward(x, rows, units, y, stream);
    RT_ACTIVATION_FORWARD_CASE(kRelu)
    RT_ACTIVATION_FORWARD_CASE(kRelu6)
    RT_ACTIVATION_FORWARD_CASE(kSigmoid)
    RT_ACTIVATION_FORWARD_CASE(kTanh)
    RT_ACTIVATION_FORWARD_CASE(kGelu)
    RT_ACTIVATION_FORWARD_CASE(kGeluTanh)
    RT_ACTIVATION_FORWARD_CASE(kSwish)
    RT_ACTIVATION_FORWARD_CASE(kElu)
    RT_ACTIVATION_FORWARD_CASE(kSelu)
    RT_ACTIVATION_FORWARD_CASE(kLeakyRelu)
    RT_ACTIVATION_FORWARD_CASE(kSoftplus)
    RT_ACTIVATION_FORWARD_CASE(kSoftsign)
    RT_ACTIVATION_FORWARD_CASE(kMish)
    RT_ACTIVATION_FORWARD_CASE(kExponential)
  }
#undef RT_ACTIVATION_FORWARD_CASE
  return cudaErrorInvalidValue;  // not an ops::Activation
}

cudaError_t ActivationBackward(ops::Activation act, const ops::Op::Relu& relu, const float* dy, const float* x,
                               const float* y, int64_t rows, int units, float* dx, cudaStream_t stream) {
  if (rows <= 0 || units <= 0) return cudaSuccess;
  const int64_t n = rows * units;
  if (relu.generic) {
    if (x == nullptr) return cudaErrorInvalidValue;
    GenericReluBackwardKernel<<<ActBlocks(n), kActThreads, 0, stream>>>(relu, dy, x, n, dx);
    return cudaGetLastError();
  }
#define RT_ACTIVATION_BACKWARD_CASE(A) \
  case Activation::A:                  \
    return LaunchBackward<Activation::A>(dy, x, y, n, dx, stream);
  switch (act) {
    case Activation::kLinear:
      if (dx == dy) return cudaSuccess;
      return cudaMemcpyAsync(dx, dy, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, stream);
    case Activation::kSoftmax:
      return SoftmaxBackward(dy, y, rows, units, dx, stream);
    RT_ACTIVATION_BACKWARD_CASE(kRelu)
    RT_ACTIVATION_BACKWARD_CASE(kRelu6)
    RT_ACTIVATION_BACKWARD_CASE(kSigmoid)
    RT_ACTIVATION_BACKWARD_CASE(kTanh)
    RT_ACTIVATION_BACKWARD_CASE(kGelu)
    RT_ACTIVATION_BACKWARD_CASE(kGeluTanh)
    RT_ACTIVATION_BACKWARD_CASE(kSwish)
    RT_ACTIVATION_BACKWARD_CASE(kElu)
    RT_ACTIVATION_BACKWARD_CASE(kSelu)
    RT_ACTIVATION_BACKWARD_CASE(kLeakyRelu)
    RT_ACTIVATION_BACKWARD_CASE(kSoftplus)
    RT_ACTIVATION_BACKWARD_CASE(kSoftsign)
    RT_ACTIVATION_BACKWARD_CASE(kMish)
    RT_ACTIVATION_BACKWARD_CASE(kExponential)
  }
#undef RT_ACTIVATION_BACKWARD_CASE
  return cudaErrorInvalidValue;  // not an ops::Activation
}

}  // namespace ringtrain::gpu
