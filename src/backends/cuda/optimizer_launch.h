// The CUDA kernels of the GPU's optimizer step and weight regularization
// (backends/cuda/optimizer_kernels.cu), for backends/cuda/optimizer_kernels.cc. The
// arithmetic is backends/cuda/optimizer_math.h; these functions only map threads onto
// its tables (om::Chunk: pieces of at most om::kSumBlock elements, each segment's pieces
// consecutive and in order).
//
// Each function enqueues its work on `stream` and returns the launch's error
// (cudaSuccess when enqueued, or when there is nothing to do); none synchronises or
// allocates. No atomics: every output is written by one thread and every sum runs in an
// order fixed by the tables, so the same inputs give the same bits every run.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/optimizer_math.h"

namespace ringtrain::gpu {

// partial[c] = the sum of squares of g over chunks[c] (om::SumSquares), one thread per piece.
cudaError_t ChunkSumSquares(const float* g, const om::Chunk* chunks, int64_t num_chunks, double* partial,
                            cudaStream_t stream);

// clipnorm c: div[v] = om::ClipNormDivisor(variable v's sum, c) for v in [0, num_vars),
// variable v's pieces being [var_first[v], var_first[v + 1]).
cudaError_t ClipNormDivisors(const double* partial, const int64_t* var_first, int64_t num_vars, float c, float* div,
                             cudaStream_t stream);

// global_clipnorm c: *scale = om::GlobalClipScale(om::GlobalSum(...), c), on one thread.
cudaError_t GlobalClipScale(const double* partial, const int64_t* var_first, int64_t num_vars, float c, float* scale,
                            cudaStream_t stream);

// p[i] = om::UpdateElement(a, i, om::ClippedGradient(a, g[i], var), p[i]) for every
// element of every piece (one block per piece), updating a's slots.
cudaError_t OptimizerUpdate(const om::StepArgs& a, float* p, const float* g, const om::Chunk* chunks,
                            int64_t num_chunks, cudaStream_t stream);

// x[0, n) = value.
cudaError_t FillArray(float* x, size_t n, float value, cudaStream_t stream);

// g[i] = om::RegularizerGradient(g[i], w[i], l1, l2, scale) for the elements of the
// pieces within [begin, end), segments[chunks[c].segment] holding the factors.
cudaError_t RegularizerGradients(const float* w, float* g, const om::Chunk* chunks, int64_t num_chunks,
                                 const om::RegSegment* segments, int64_t begin, int64_t end, float scale,
                                 cudaStream_t stream);

// abs_partial[c], square_partial[c] = om::PenaltySums over chunks[c], one thread per piece.
cudaError_t PenaltyPartials(const float* w, const om::Chunk* chunks, int64_t num_chunks, double* abs_partial,
                            double* square_partial, cudaStream_t stream);

// *penalty = om::PenaltyTotal(...), and *loss_sum += batch * penalty when loss_sum is not
// null (the CPU engine's loss), on one thread. With no segments the penalty is 0.
cudaError_t PenaltyTotal(const om::RegSegment* segments, int64_t num_segments, const double* abs_partial,
                         const double* square_partial, double* penalty, double* loss_sum, double batch,
                         cudaStream_t stream);

}  // namespace ringtrain::gpu
