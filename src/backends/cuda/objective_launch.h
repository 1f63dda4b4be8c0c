// The CUDA kernels of the GPU objective (backends/cuda/objective_kernels.h), as plain
// launch functions: each enqueues its work on `stream` and returns the launch's error
// (cudaSuccess when enqueued); none synchronises or allocates. The arithmetic is
// backends/cuda/objective_math.h; these only map threads onto examples and elements.
//
// Determinism: no atomics; every output is written by one thread, and the sums over
// the batch run in example order on one thread (the CPU's order), so the same inputs
// give the same bits every run.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/objective_math.h"

namespace ringtrain::gpu {

// Per example i of outputs[batch, p.n]: row_loss[i] = om::LossRow, stats[i] its row
// statistics (for ObjectiveLossGrads).
cudaError_t ObjectiveLossRows(const om::LossParams& p, const float* outputs, const int32_t* labels, int batch,
                              om::RowStats* stats, double* row_loss, cudaStream_t stream);

// grad[i, c] = om::LossGrad(p, row i, c, labels[i], stats[i], grad_scale) over batch * p.n elements.
cudaError_t ObjectiveLossGrads(const om::LossParams& p, const float* outputs, const int32_t* labels, int batch,
                               const om::RowStats* stats, float grad_scale, float* grad, cudaStream_t stream);

// scores[i] = om::MetricScore(m, row i, labels[i]) (the accuracies).
cudaError_t ObjectiveMetricScores(const om::MetricParams& m, const float* outputs, const int32_t* labels, int batch,
                                  double* scores, cudaStream_t stream);

// out[0] = ((0 + values[0]) + values[1]) + ... in example order, on one thread; with
// `with_count` also out[1] = batch (the examples sum of a mean metric).
cudaError_t ObjectiveOrderedSum(const double* values, int batch, bool with_count, double* out, cudaStream_t stream);

// codes[i] = om::AucCode(m, outputs[i], labels[i]) (one output per example).
cudaError_t ObjectiveAucCodes(const om::MetricParams& m, const float* outputs, const int32_t* labels, int batch,
                              int32_t* codes, cudaStream_t stream);

// The AUC's 4 * num_thresholds sums (om::AucWrite's layout) from the examples' codes:
// one thread per threshold counts every example (integer counts, exact).
cudaError_t ObjectiveAucSums(const int32_t* codes, int batch, int num_thresholds, double* sums, cudaStream_t stream);

}  // namespace ringtrain::gpu
