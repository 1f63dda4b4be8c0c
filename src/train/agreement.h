// The values the workers agree on through collectives, each in its own type: which
// worker is furthest along (int64 steps), the smallest shard (int64 sizes), and the
// epoch's metric sums (the loss in float64, the counts exactly in int64, so they stay
// exact past 2^24 examples where float sums did not).
//
// Every function is a collective: every worker calls it, in the same order, and gets
// the same result (bit-identical on every worker). Blocking: the communicator's deadline.
// Errors: the communicator's, with what was being agreed on as context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"

namespace ringtrain::train {

// The lowest rank among those whose `step` is the highest, and that step; and whether
// every worker gave the same step and the same `state_fingerprint` (a fingerprint of
// its whole training state), when the state need not be sent at all.
struct FurthestWorker {
  int rank = 0;
  int64_t step = 0;
  bool all_same_state = false;
};
StatusOr<FurthestWorker> FindFurthestWorker(collective::Communicator* comm, int64_t step,
                                            uint64_t state_fingerprint);

// Preemption: the ranks whose `asked` is true (each worker's own stop request, e.g. a
// SIGTERM), in rank order; empty when none asked. Every worker gets the same list, so a
// request on any worker stops every worker after the same step. It exchanges one int64
// per worker and touches no model data, so it changes no bits.
StatusOr<std::vector<int>> RanksAskingToStop(collective::Communicator* comm, bool asked);

// The smallest of every worker's `value`.
StatusOr<int64_t> SmallestOverWorkers(collective::Communicator* comm, int64_t value);

// An epoch's metrics so far: Keras reports loss_sum / examples and each metric's
// Result over its sums (engine::Objective).
struct MetricSums {
  double loss_sum = 0;              // per-example losses (regularization included), summed
  std::vector<double> metric_sums;  // the objective's metrics' sums; empty counts as zeros
  int64_t examples = 0;

  MetricSums& operator+=(const MetricSums& o) {
    loss_sum += o.loss_sum;
    if (metric_sums.size() < o.metric_sums.size()) metric_sums.resize(o.metric_sums.size(), 0.0);
    for (size_t i = 0; i < o.metric_sums.size(); ++i) metric_sums[i] += o.metric_sums[i];
    examples += o.examples;
    return *this;
  }
};
// Every worker's `mine`, summed over the workers (loss and metric sums in a fixed
// order, so the bits are the same on every worker and across runs). Every worker's
// metric_sums must have the same size (a size of 0 is taken as zeros of the size
// `num_sums`).
StatusOr<MetricSums> SumOverWorkers(collective::Communicator* comm, const MetricSums& mine, size_t num_sums);

}  // namespace ringtrain::train
