// The CUDA kernels behind backends/cuda/norm_launch.h. The arithmetic of every element and
// every thread's share of a sum lives in backends/cuda/norm_math.h (unit-tested on the
// host against the CPU layers); this file maps threads onto elements, rows and chunks.
//
// Conventions (as backends/cuda/gpu_kernels.cu): 256 threads per element-wise block;
// grid-stride loops with 64-bit indices; grids capped; no atomics: each output is
// written by one thread and every sum runs in an order fixed by the shape alone.
//   - per-channel (per-column) sums: pass 1, thread (x, y) of block (bx, by) sums chunk
//     bx * 8 + y of column by * 32 + x (a warp reads 128 contiguous bytes of a row) into
//     partial[lane * cols + col]; pass 2, one thread per column adds the chunks in order.
//   - per-row sums (LayerNorm): one block of nm::RowThreads(n) threads per row, each
//     thread's strided share, then a fixed tree in shared memory (nm::TreeSum's order).
// Each entry point returns cudaGetLastError() after its launches.
#include "backends/cuda/norm_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "backends/cuda/norm_math.h"

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y
constexpr int kTileCols = 32;
constexpr int kLanesPerBlock = 8;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// The two-pass column sums' grid and block for `lanes` chunks of `cols` columns.
dim3 PartialBlock() { return dim3(kTileCols, kLanesPerBlock); }
dim3 PartialGrid(int64_t lanes, int64_t cols) {
  const int64_t x = std::min((lanes + kLanesPerBlock - 1) / kLanesPerBlock, kMaxBlocks);
  const int64_t y = std::min((cols + kTileCols - 1) / kTileCols, kMaxGridY);
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

// Loops thread (threadIdx.x, threadIdx.y) of a PartialGrid over its (lane, col) pairs.
template <typename Body>
__device__ inline void ForEachLaneAndColumn(int64_t rows, int64_t lanes, int64_t cols, Body body) {
  const int64_t lane_stride = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t lane = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; lane < lanes;
       lane += lane_stride) {
    int64_t begin, end;
    nm::LaneRows(rows, lanes, lane, &begin, &end);
    for (int64_t tile = blockIdx.y; tile * kTileCols < cols; tile += gridDim.y) {
      const int64_t col = tile * kTileCols + threadIdx.x;
      if (col < cols) body(lane, begin, end, col);
    }
  }
}

// The sum over the block's threads of each thread's v, added as nm::TreeSum does
// (blockDim.x a power of two, at most nm::kMaxRowThreads). Every thread gets the sum.
__device__ inline double BlockSum(double v, double* sh) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sh[t] = sh[t] + sh[t + s];
    __syncthreads();
  }
  const double total = sh[0];
  __syncthreads();  // sh is free again for the next sum
  return total;
}

// ---------------------------------------------------------------- BatchNormalization

__global__ void BnSumsPartialKernel(const float* x, int64_t rows, int c, int64_t lanes, double* partial) {
  double* ps = partial;
  double* pq = partial + lanes * c;
  ForEachLaneAndColumn(rows, lanes, c, [&](int64_t lane, int64_t begin, int64_t end, int64_t col) {
    double s, q;
    nm::ChannelSumsChunk(x, begin, end, c, static_cast<int>(col), &s, &q);
    ps[lane * c + col] = s;
    pq[lane * c + col] = q;
  });
}

__global__ void BnSumsFinalKernel(const double* partial, int64_t lanes, int c, double* sums) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    sums[k] = nm::SumOverLanes(partial, lanes, c, k);
    sums[c + k] = nm::SumOverLanes(partial + lanes * c, lanes, c, k);
  }
}

__global__ void BnBatchCoefKernel(const double* sums, double count, int c, float eps, const float* gamma,
                                  const float* beta, float* mean, float* invstd, float* a, float* b, float* stats) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    const nm::BnCoef r = nm::BatchCoef(sums[k], sums[c + k], count, eps, gamma, beta, static_cast<int>(k));
    mean[k] = r.mean;
    invstd[k] = r.invstd;
    a[k] = r.a;
    b[k] = r.b;
    if (stats != nullptr) {
      stats[k] = r.mean;
      stats[c + k] = r.var;
    }
  }
}

__global__ void BnMovingCoefKernel(const float* moving_mean, const float* moving_var, int c, float eps,
                                   const float* gamma, const float* beta, float* mean, float* invstd, float* a,
                                   float* b) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    const nm::BnCoef r = nm::MovingCoef(moving_mean[k], moving_var[k], eps, gamma, beta, static_cast<int>(k));
    mean[k] = r.mean;
    invstd[k] = r.invstd;
    a[k] = r.a;
    b[k] = r.b;
  }
}

__global__ void BnAffineKernel(const float* x, int64_t n, int c, const float* a, const float* b, bool relu,
                               float* y) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int k = static_cast<int>(i % c);
    y[i] = nm::Affine(x[i], a[k], b[k], relu);
  }
}

__global__ void BnGradPartialKernel(const float* dy, const float* relu_y, const float* x, int64_t rows, int c,
                                    int64_t lanes, double* partial) {
  double* pg = partial;
  double* pgx = partial + lanes * c;
  ForEachLaneAndColumn(rows, lanes, c, [&](int64_t lane, int64_t begin, int64_t end, int64_t col) {
    double sg, sgx;
    nm::ChannelGradSumsChunk(dy, relu_y, x, begin, end, c, static_cast<int>(col), &sg, &sgx);
    pg[lane * c + col] = sg;
    pgx[lane * c + col] = sgx;
  });
}

__global__ void BnGradFinalKernel(const double* partial, int64_t lanes, int c, const float* mean,
                                  const float* invstd, double* sums, float* dgamma, float* dbeta) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    const double sg = nm::SumOverLanes(partial, lanes, c, k);
    const double sgxhat = nm::GradXhatSum(sg, nm::SumOverLanes(partial + lanes * c, lanes, c, k), mean[k], invstd[k]);
    sums[k] = sg;
    sums[c + k] = sgxhat;
    if (dbeta != nullptr) dbeta[k] = static_cast<float>(sg);
    if (dgamma != nullptr) dgamma[k] = static_cast<float>(sgxhat);
  }
}

__global__ void BnInputGradCoefKernel(const double* sums, double count, int c, const float* a, const float* invstd,
                                      float* mean_g, float* coef_b) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    nm::InputGradCoef(sums[k], sums[c + k], count, a[k], invstd[k], &mean_g[k], &coef_b[k]);
  }
}

__global__ void BnInputGradKernel(const float* dy, const float* relu_y, const float* x, int64_t n, int c,
                                  const float* a, const float* mean_g, const float* coef_b, const float* mean,
                                  float* din) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int k = static_cast<int>(i % c);
    din[i] = nm::InputGrad(nm::MaskedGrad(dy, relu_y, i), x[i], a[k], mean_g[k], coef_b[k], mean[k]);
  }
}

__global__ void BnScaleGradKernel(const float* dy, const float* relu_y, int64_t n, int c, const float* a,
                                  float* din) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    din[i] = nm::ScaleGrad(nm::MaskedGrad(dy, relu_y, i), a[static_cast<int>(i % c)]);
  }
}

__global__ void BnMovingUpdateKernel(float* moving_mean, float* moving_var, const float* sums, int c, float n,
                                     float keep, float take) {
  for (int64_t k = GlobalThread(); k < c; k += GridStride()) {
    moving_mean[k] = nm::MovingUpdate(moving_mean[k], sums[k], n, keep, take);
    moving_var[k] = nm::MovingUpdate(moving_var[k], sums[c + k], n, keep, take);
  }
}

// ---------------------------------------------------------------- LayerNormalization

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(std::min(rows, kMaxBlocks)); }

__global__ void LnForwardKernel(const float* x, int64_t rows, int64_t n, float eps, const float* gamma,
                                const float* beta, float* y, float* mean, float* invstd) {
  __shared__ double sh[nm::kMaxRowThreads];
  const int t = threadIdx.x, threads = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * n;
    const double m = BlockSum(nm::RowPartSum(xr, n, t, threads), sh) / static_cast<double>(n);
    const double q = BlockSum(nm::RowPartSqDev(xr, n, m, t, threads), sh);
    const float mr = static_cast<float>(m);
    const float ir = nm::RowInvStd(q, n, eps);
    if (t == 0) {
      mean[r] = mr;
      invstd[r] = ir;
    }
    float* yr = y + r * n;
    for (int64_t k = t; k < n; k += threads) yr[k] = nm::LnOutput(xr[k], mr, ir, gamma, beta, k);
  }
}

__global__ void LnParamPartialKernel(const float* dy, const float* x, const float* mean, const float* invstd,
                                     int64_t rows, int64_t n, int64_t lanes, double* partial) {
  double* pg = partial;
  double* pb = partial + lanes * n;
  ForEachLaneAndColumn(rows, lanes, n, [&](int64_t lane, int64_t begin, int64_t end, int64_t col) {
    double sg, sb;
    nm::LnParamGradChunk(dy, x, mean, invstd, begin, end, n, col, &sg, &sb);
    pg[lane * n + col] = sg;
    pb[lane * n + col] = sb;
  });
}

__global__ void LnParamFinalKernel(const double* partial, int64_t lanes, int64_t n, float* dgamma, float* dbeta) {
  for (int64_t k = GlobalThread(); k < n; k += GridStride()) {
    if (dgamma != nullptr) dgamma[k] = static_cast<float>(nm::SumOverLanes(partial, lanes, n, k));
    if (dbeta != nullptr) dbeta[k] = static_cast<float>(nm::SumOverLanes(partial + lanes * n, lanes, n, k));
  }
}

__global__ void LnInputGradKernel(const float* dy, const float* x, const float* mean, const float* invstd,
                                  int64_t rows, int64_t n, const float* gamma, float* din) {
  __shared__ double sh[nm::kMaxRowThreads];
  const int t = threadIdx.x, threads = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* dr = dy + r * n;
    const float* xr = x + r * n;
    const float mr = mean[r], ir = invstd[r];
    double sg, sgx;
    nm::RowPartGradSums(dr, xr, gamma, n, mr, ir, t, threads, &sg, &sgx);
    const float mg = nm::RowMean(BlockSum(sg, sh), n);
    const float mgx = nm::RowMean(BlockSum(sgx, sh), n);
    float* o = din + r * n;
    for (int64_t k = t; k < n; k += threads) {
      o[k] = nm::LnInputGrad(nm::LnScaledGrad(dr[k], gamma, k), nm::Xhat(xr[k], mr, ir), ir, mg, mgx);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- BatchNormalization

size_t BnPartialDoubles(int64_t rows, int c) {
  return c > 0 ? 2 * static_cast<size_t>(nm::SumLanes(rows)) * static_cast<size_t>(c) : 0;
}

cudaError_t BnChannelSums(const float* x, int64_t rows, int c, double* partial, double* sums, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  const int64_t lanes = nm::SumLanes(rows);
  BnSumsPartialKernel<<<PartialGrid(lanes, c), PartialBlock(), 0, stream>>>(x, rows, c, lanes, partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  BnSumsFinalKernel<<<Blocks(c), kThreads, 0, stream>>>(partial, lanes, c, sums);
  return cudaGetLastError();
}

cudaError_t BnBatchCoefficients(const double* sums, double count, int c, float eps, const float* gamma,
                                const float* beta, float* mean, float* invstd, float* a, float* b, float* stats,
                                cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  BnBatchCoefKernel<<<Blocks(c), kThreads, 0, stream>>>(sums, count, c, eps, gamma, beta, mean, invstd, a, b, stats);
  return cudaGetLastError();
}

cudaError_t BnMovingCoefficients(const float* moving_mean, const float* moving_var, int c, float eps,
                                 const float* gamma, const float* beta, float* mean, float* invstd, float* a,
                                 float* b, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  BnMovingCoefKernel<<<Blocks(c), kThreads, 0, stream>>>(moving_mean, moving_var, c, eps, gamma, beta, mean, invstd,
                                                         a, b);
  return cudaGetLastError();
}

cudaError_t BnAffine(const float* x, int64_t rows, int c, const float* a, const float* b, bool relu, float* y,
                     cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n <= 0) return cudaSuccess;
  BnAffineKernel<<<Blocks(n), kThreads, 0, stream>>>(x, n, c, a, b, relu, y);
  return cudaGetLastError();
}

cudaError_t BnGradSums(const float* dy, const float* relu_y, const float* x, int64_t rows, int c, const float* mean,
                       const float* invstd, double* partial, double* sums, float* dgamma, float* dbeta,
                       cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  const int64_t lanes = nm::SumLanes(rows);
  BnGradPartialKernel<<<PartialGrid(lanes, c), PartialBlock(), 0, stream>>>(dy, relu_y, x, rows, c, lanes, partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  BnGradFinalKernel<<<Blocks(c), kThreads, 0, stream>>>(partial, lanes, c, mean, invstd, sums, dgamma, dbeta);
  return cudaGetLastError();
}

cudaError_t BnInputGradCoefficients(const double* sums, double count, int c, const float* a, const float* invstd,
                                    float* mean_g, float* coef_b, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  BnInputGradCoefKernel<<<Blocks(c), kThreads, 0, stream>>>(sums, count, c, a, invstd, mean_g, coef_b);
  return cudaGetLastError();
}

cudaError_t BnInputGrad(const float* dy, const float* relu_y, const float* x, int64_t rows, int c, const float* a,
                        const float* mean_g, const float* coef_b, const float* mean, float* din,
                        cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n <= 0) return cudaSuccess;
  BnInputGradKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, relu_y, x, n, c, a, mean_g, coef_b, mean, din);
  return cudaGetLastError();
}

cudaError_t BnScaleGrad(const float* dy, const float* relu_y, int64_t rows, int c, const float* a, float* din,
                        cudaStream_t stream) {
  const int64_t n = rows * c;
  if (n <= 0) return cudaSuccess;
  BnScaleGradKernel<<<Blocks(n), kThreads, 0, stream>>>(dy, relu_y, n, c, a, din);
  return cudaGetLastError();
}

cudaError_t BnMovingUpdate(float* moving_mean, float* moving_var, const float* sums, int c, float n, float keep,
                           float take, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  BnMovingUpdateKernel<<<Blocks(c), kThreads, 0, stream>>>(moving_mean, moving_var, sums, c, n, keep, take);
  return cudaGetLastError();
}

// ---------------------------------------------------------------- LayerNormalization

cudaError_t LnForward(const float* x, int64_t rows, int64_t n, float eps, const float* gamma, const float* beta,
                      float* y, float* mean, float* invstd, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  LnForwardKernel<<<RowBlocks(rows), nm::RowThreads(n), 0, stream>>>(x, rows, n, eps, gamma, beta, y, mean, invstd);
  return cudaGetLastError();
}

size_t LnPartialDoubles(int64_t rows, int64_t n) {
  return n > 0 ? 2 * static_cast<size_t>(nm::SumLanes(rows)) * static_cast<size_t>(n) : 0;
}

cudaError_t LnParamGrads(const float* dy, const float* x, const float* mean, const float* invstd, int64_t rows,
                         int64_t n, double* partial, float* dgamma, float* dbeta, cudaStream_t stream) {
  if (n <= 0 || (dgamma == nullptr && dbeta == nullptr)) return cudaSuccess;
  const int64_t lanes = nm::SumLanes(rows);
  LnParamPartialKernel<<<PartialGrid(lanes, n), PartialBlock(), 0, stream>>>(dy, x, mean, invstd, rows, n, lanes,
                                                                             partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  LnParamFinalKernel<<<Blocks(n), kThreads, 0, stream>>>(partial, lanes, n, dgamma, dbeta);
  return cudaGetLastError();
}

cudaError_t LnInputGrad(const float* dy, const float* x, const float* mean, const float* invstd, int64_t rows,
                        int64_t n, const float* gamma, float* din, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  LnInputGradKernel<<<RowBlocks(rows), nm::RowThreads(n), 0, stream>>>(dy, x, mean, invstd, rows, n, gamma, din);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
