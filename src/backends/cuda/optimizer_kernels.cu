// The CUDA kernels behind backends/cuda/optimizer_launch.h: the optimizer step (norm
// reductions, then one fused pass of clipping, weight decay and the rule) and the weight
// regularization (gradient, penalty). The arithmetic of every element lives in
// backends/cuda/optimizer_math.h (unit-tested on the host against the CPU); this file only
// maps threads onto pieces.
//
// Conventions: an element-wise kernel gives each piece (at most om::kSumBlock elements)
// to one block of 256 threads, the blocks looping over the pieces when there are more
// than kMaxBlocks; a sum over a piece runs on one thread (the CPU's order), in blocks of
// 32 threads so that the pieces spread over the multiprocessors. No atomics. An empty
// problem launches nothing. Each entry point returns cudaGetLastError() after its launches.
#include "backends/cuda/optimizer_launch.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ringtrain::gpu {
namespace {

constexpr int kThreads = 256;    // element-wise kernels
constexpr int kSumThreads = 32;  // one thread per piece
constexpr int64_t kMaxBlocks = 65535;

unsigned BlocksFor(int64_t items, int threads) {
  return static_cast<unsigned>(std::min((items + threads - 1) / threads, kMaxBlocks));
}
unsigned PieceBlocks(int64_t num_chunks) { return static_cast<unsigned>(std::min(num_chunks, kMaxBlocks)); }

__device__ inline int64_t GlobalThread() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t GridStride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// ---------------------------------------------------------------- clipping

__global__ void ChunkSumSquaresKernel(const float* g, const om::Chunk* chunks, int64_t num_chunks, double* partial) {
  for (int64_t c = GlobalThread(); c < num_chunks; c += GridStride()) {
    const om::Chunk ch = chunks[c];
    partial[c] = om::SumSquares(g + ch.offset, ch.count);
  }
}

__global__ void ClipNormDivisorsKernel(const double* partial, const int64_t* var_first, int64_t num_vars, float c,
                                       float* div) {
  for (int64_t v = GlobalThread(); v < num_vars; v += GridStride()) {
    div[v] = om::ClipNormDivisor(om::VariableSum(partial, var_first[v], var_first[v + 1]), c);
  }
}

__global__ void GlobalClipScaleKernel(const double* partial, const int64_t* var_first, int64_t num_vars, float c,
                                      float* scale) {
  if (GlobalThread() == 0) *scale = om::GlobalClipScale(om::GlobalSum(partial, var_first, num_vars), c);
}

// ---------------------------------------------------------------- the update
// R and C are a.rule and a.clip, fixed at compile time so that the switches of
// om::UpdateElement and om::ClippedGradient fold away.
template <om::Rule R, om::Clip C>
__global__ void UpdateKernel(om::StepArgs a, float* p, const float* g, const om::Chunk* chunks, int64_t num_chunks) {
  a.rule = R;
  a.clip = C;
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const om::Chunk ch = chunks[c];
    const int64_t end = ch.offset + ch.count;
    for (int64_t i = ch.offset + threadIdx.x; i < end; i += blockDim.x) {
      p[i] = om::UpdateElement(a, i, om::ClippedGradient(a, g[i], ch.segment), p[i]);
    }
  }
}

template <om::Rule R>
void LaunchUpdate(const om::StepArgs& a, float* p, const float* g, const om::Chunk* chunks, int64_t num_chunks,
                  cudaStream_t stream) {
  const unsigned blocks = PieceBlocks(num_chunks);
  switch (a.clip) {
    case om::Clip::kNone:
      UpdateKernel<R, om::Clip::kNone><<<blocks, kThreads, 0, stream>>>(a, p, g, chunks, num_chunks);
      return;
    case om::Clip::kValue:
      UpdateKernel<R, om::Clip::kValue><<<blocks, kThreads, 0, stream>>>(a, p, g, chunks, num_chunks);
      return;
    case om::Clip::kNorm:
      UpdateKernel<R, om::Clip::kNorm><<<blocks, kThreads, 0, stream>>>(a, p, g, chunks, num_chunks);
      return;
    case om::Clip::kGlobalNorm:
      UpdateKernel<R, om::Clip::kGlobalNorm><<<blocks, kThreads, 0, stream>>>(a, p, g, chunks, num_chunks);
      return;
  }
}

__global__ void FillKernel(float* x, int64_t n, float value) {
  for (int64_t i = GlobalThread(); i < n; i += GridStride()) x[i] = value;
}

// ---------------------------------------------------------------- regularization

__global__ void RegularizerGradientsKernel(const float* w, float* g, const om::Chunk* chunks, int64_t num_chunks,
                                           const om::RegSegment* segments, int64_t begin, int64_t end, float scale) {
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const om::Chunk ch = chunks[c];
    const int64_t first = ch.offset > begin ? ch.offset : begin;
    const int64_t last = ch.offset + ch.count < end ? ch.offset + ch.count : end;
    if (first >= last) continue;
    const double l1 = segments[ch.segment].l1, l2 = segments[ch.segment].l2;
    for (int64_t i = first + threadIdx.x; i < last; i += blockDim.x) {
      g[i] = om::RegularizerGradient(g[i], w[i], l1, l2, scale);
    }
  }
}

__global__ void PenaltyPartialsKernel(const float* w, const om::Chunk* chunks, int64_t num_chunks,
                                      double* abs_partial, double* square_partial) {
  for (int64_t c = GlobalThread(); c < num_chunks; c += GridStride()) {
    const om::Chunk ch = chunks[c];
    om::PenaltySums(w + ch.offset, ch.count, abs_partial + c, square_partial + c);
  }
}

__global__ void PenaltyTotalKernel(const om::RegSegment* segments, int64_t num_segments, const double* abs_partial,
                                   const double* square_partial, double* penalty, double* loss_sum, double batch) {
  if (GlobalThread() != 0) return;
  const double total = om::PenaltyTotal(segments, num_segments, abs_partial, square_partial);
  if (penalty != nullptr) *penalty = total;
  if (loss_sum != nullptr) *loss_sum += batch * total;
}

}  // namespace

cudaError_t ChunkSumSquares(const float* g, const om::Chunk* chunks, int64_t num_chunks, double* partial,
                            cudaStream_t stream) {
  if (num_chunks <= 0) return cudaSuccess;
  ChunkSumSquaresKernel<<<BlocksFor(num_chunks, kSumThreads), kSumThreads, 0, stream>>>(g, chunks, num_chunks,
                                                                                        partial);
  return cudaGetLastError();
}

cudaError_t ClipNormDivisors(const double* partial, const int64_t* var_first, int64_t num_vars, float c, float* div,
                             cudaStream_t stream) {
  if (num_vars <= 0) return cudaSuccess;
  ClipNormDivisorsKernel<<<BlocksFor(num_vars, kSumThreads), kSumThreads, 0, stream>>>(partial, var_first, num_vars,
                                                                                       c, div);
  return cudaGetLastError();
}

cudaError_t GlobalClipScale(const double* partial, const int64_t* var_first, int64_t num_vars, float c, float* scale,
                            cudaStream_t stream) {
  GlobalClipScaleKernel<<<1, 1, 0, stream>>>(partial, var_first, num_vars, c, scale);
  return cudaGetLastError();
}

cudaError_t OptimizerUpdate(const om::StepArgs& a, float* p, const float* g, const om::Chunk* chunks,
                            int64_t num_chunks, cudaStream_t stream) {
  if (num_chunks <= 0) return cudaSuccess;
  switch (a.rule) {
    case om::Rule::kSgd: LaunchUpdate<om::Rule::kSgd>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kMomentum: LaunchUpdate<om::Rule::kMomentum>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kNesterov: LaunchUpdate<om::Rule::kNesterov>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kAdam: LaunchUpdate<om::Rule::kAdam>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kAmsgrad: LaunchUpdate<om::Rule::kAmsgrad>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kRmsprop: LaunchUpdate<om::Rule::kRmsprop>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kAdagrad: LaunchUpdate<om::Rule::kAdagrad>(a, p, g, chunks, num_chunks, stream); break;
    case om::Rule::kNadam: LaunchUpdate<om::Rule::kNadam>(a, p, g, chunks, num_chunks, stream); break;
  }
  return cudaGetLastError();
}

cudaError_t FillArray(float* x, size_t n, float value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int64_t count = static_cast<int64_t>(n);
  FillKernel<<<BlocksFor(count, kThreads), kThreads, 0, stream>>>(x, count, value);
  return cudaGetLastError();
}

cudaError_t RegularizerGradients(const float* w, float* g, const om::Chunk* chunks, int64_t num_chunks,
                                 const om::RegSegment* segments, int64_t begin, int64_t end, float scale,
                                 cudaStream_t stream) {
  if (num_chunks <= 0 || begin >= end) return cudaSuccess;
  RegularizerGradientsKernel<<<PieceBlocks(num_chunks), kThreads, 0, stream>>>(w, g, chunks, num_chunks, segments,
                                                                                begin, end, scale);
  return cudaGetLastError();
}

cudaError_t PenaltyPartials(const float* w, const om::Chunk* chunks, int64_t num_chunks, double* abs_partial,
                            double* square_partial, cudaStream_t stream) {
  if (num_chunks <= 0) return cudaSuccess;
  PenaltyPartialsKernel<<<BlocksFor(num_chunks, kSumThreads), kSumThreads, 0, stream>>>(w, chunks, num_chunks,
                                                                                        abs_partial, square_partial);
  return cudaGetLastError();
}

cudaError_t PenaltyTotal(const om::RegSegment* segments, int64_t num_segments, const double* abs_partial,
                         const double* square_partial, double* penalty, double* loss_sum, double batch,
                         cudaStream_t stream) {
  if (penalty == nullptr && loss_sum == nullptr) return cudaSuccess;
  PenaltyTotalKernel<<<1, 1, 0, stream>>>(segments, num_segments, abs_partial, square_partial, penalty, loss_sum,
                                          batch);
  return cudaGetLastError();
}

}  // namespace ringtrain::gpu
