// Sparse categorical cross-entropy from logits.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace ringtrain::nn {

struct LossStats {
  double loss_sum = 0;  // sum over the batch of -log softmax(logits)[label]
  int64_t correct = 0;  // examples whose argmax equals the label
};

// Computes the batch's loss statistics and writes
//   grad_logits[i, c] = (softmax(logits_i)[c] - [c == label_i]) * grad_scale.
// With grad_scale = 1 / global_batch, summing the gradients of all workers gives the
// gradient of the mean loss over the global batch (the custom-training-loop seed's
// scaling). grad_logits may be null (evaluation).
// Labels must lie in [0, classes) (see CheckLabels); an example whose label is
// outside makes loss_sum NaN, and the call logs an error.
LossStats SparseSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int batch, int classes,
                                    float grad_scale, float* grad_logits);

// INVALID_ARGUMENT naming the first label outside [0, classes), else OK.
Status CheckLabels(const int32_t* labels, int batch, int classes);

}  // namespace ringtrain::nn
