// The CUDA kernels behind backends/cuda/objective_launch.h. The arithmetic of every
// example and element lives in backends/cuda/objective_math.h (unit-tested on the host
// against the CPU's losses and metrics); this file only maps threads onto them.
//
// Conventions as gpu_kernels.cu: 256 threads per block, grid-stride loops with 64-bit
// indices, a grid capped at kMaxBlocks, an empty problem launches nothing, no atomics.
#include "backends/cuda/objective_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;
// Examples' AUC codes staged in shared memory per pass of ObjectiveAucSums (8 KiB).
constexpr int kAucTile = 2048;

unsigned Blocks(int64_t n) { return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void LossRowKernel(om::LossParams p, const float* outputs, const int32_t* labels, int batch,
                              om::RowStats* stats, double* row_loss) {
  for (int64_t i = GlobalThread(); i < batch; i += GridStride()) {
    om::RowStats st;
    row_loss[i] = om::LossRow(p, outputs + i * p.n, labels[i], &st);
    stats[i] = st;
  }
}

__global__ void LossGradKernel(om::LossParams p, const float* outputs, const int32_t* labels, int64_t n,
                               const om::RowStats* stats, float grad_scale, float* grad) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) {
    const int64_t row = i / p.n;
    const int c = static_cast<int>(i - row * p.n);
    grad[i] = om::LossGrad(p, outputs + row * p.n, c, labels[row], stats[row], grad_scale);
  }
}

__global__ void MetricScoreKernel(om::MetricParams m, const float* outputs, const int32_t* labels, int batch,
                                  double* scores) {
  for (int64_t i = GlobalThread(); i < batch; i += GridStride()) {
    scores[i] = om::MetricScore(m, outputs + i * m.n, labels[i]);
  }
}

// One thread, in example order from 0, as the CPU adds (batches are a few hundred
// examples: the serial sum is cheap and its order is the CPU's).
__global__ void OrderedSumKernel(const double* values, int batch, bool with_count, double* out) {
  if (GlobalThread() != 0) return;
  double sum = 0;
  for (int i = 0; i < batch; ++i) sum += values[i];
  out[0] = sum;
  if (with_count) out[1] = batch;
}

__global__ void AucCodeKernel(om::MetricParams m, const float* outputs, const int32_t* labels, int batch,
                              int32_t* codes) {
  for (int64_t i = GlobalThread(); i < batch; i += GridStride()) codes[i] = om::AucCode(m, outputs[i], labels[i]);
}

// Thread k counts threshold k over every example; the block stages the codes in
// shared memory a tile at a time.
__global__ void AucSumsKernel(const int32_t* codes, int batch, int num_thresholds, double* sums) {
  __shared__ int32_t tile[kAucTile];
  const int64_t k = GlobalThread();
  om::AucCounts counts;
  for (int start = 0; start < batch; start += kAucTile) {
    const int len = min(kAucTile, batch - start);
    __syncthreads();
    for (int j = threadIdx.x; j < len; j += blockDim.x) tile[j] = codes[start + j];
    __syncthreads();
    if (k < num_thresholds) {
      for (int j = 0; j < len; ++j) om::AucCount(tile[j], static_cast<int>(k), &counts);
    }
  }
  if (k < num_thresholds) om::AucWrite(counts, static_cast<int>(k), num_thresholds, sums);
}

}  // namespace

cudaError_t ObjectiveLossRows(const om::LossParams& p, const float* outputs, const int32_t* labels, int batch,
                              om::RowStats* stats, double* row_loss, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  LossRowKernel<<<Blocks(batch), kThreads, 0, stream>>>(p, outputs, labels, batch, stats, row_loss);
  return cudaGetLastError();
}

cudaError_t ObjectiveLossGrads(const om::LossParams& p, const float* outputs, const int32_t* labels, int batch,
                               const om::RowStats* stats, float grad_scale, float* grad, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(batch) * p.n;
  if (n <= 0) return cudaSuccess;
  LossGradKernel<<<Blocks(n), kThreads, 0, stream>>>(p, outputs, labels, n, stats, grad_scale, grad);
  return cudaGetLastError();
}

cudaError_t ObjectiveMetricScores(const om::MetricParams& m, const float* outputs, const int32_t* labels, int batch,
                                  double* scores, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  MetricScoreKernel<<<Blocks(batch), kThreads, 0, stream>>>(m, outputs, labels, batch, scores);
  return cudaGetLastError();
}

cudaError_t ObjectiveOrderedSum(const double* values, int batch, bool with_count, double* out, cudaStream_t stream) {
  OrderedSumKernel<<<1, 1, 0, stream>>>(values, batch < 0 ? 0 : batch, with_count, out);
  return cudaGetLastError();
}

cudaError_t ObjectiveAucCodes(const om::MetricParams& m, const float* outputs, const int32_t* labels, int batch,
                              int32_t* codes, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  AucCodeKernel<<<Blocks(batch), kThreads, 0, stream>>>(m, outputs, labels, batch, codes);
  return cudaGetLastError();
}

cudaError_t ObjectiveAucSums(const int32_t* codes, int batch, int num_thresholds, double* sums, cudaStream_t stream) {
  if (num_thresholds <= 0) return cudaSuccess;
  // One thread per threshold (at most 100,000: AucOptionsFromJson's bound), no grid cap.
  const unsigned blocks = static_cast<unsigned>((num_thresholds + kThreads - 1) / kThreads);
  AucSumsKernel<<<blocks, kThreads, 0, stream>>>(codes, batch < 0 ? 0 : batch, num_thresholds, sums);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
