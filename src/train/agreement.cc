#include "train/agreement.h"

#include <algorithm>
#include <vector>

namespace ringtrain::train {

StatusOr<FurthestWorker> FindFurthestWorker(collective::Communicator* comm, int64_t step) {
  std::vector<int64_t> steps(static_cast<size_t>(comm->size()));
  RT_RETURN_IF_ERROR(comm->AllGather(&step, 1, steps.data()).WithContext("comparing the workers' steps"));
  FurthestWorker best;
  for (int r = 0; r < comm->size(); ++r) {
    const int64_t s = steps[static_cast<size_t>(r)];
    if (r == 0 || s > best.step) best = {r, s};
  }
  return best;
}

StatusOr<int64_t> SmallestOverWorkers(collective::Communicator* comm, int64_t value) {
  std::vector<int64_t> values(static_cast<size_t>(comm->size()));
  RT_RETURN_IF_ERROR(comm->AllGather(&value, 1, values.data()));
  return *std::min_element(values.begin(), values.end());
}

StatusOr<MetricSums> SumOverWorkers(collective::Communicator* comm, const MetricSums& mine) {
  MetricSums sum = mine;
  int64_t counts[2] = {mine.correct, mine.examples};
  RT_RETURN_IF_ERROR(comm->AllReduce(&sum.loss_sum, 1, collective::ReduceOp::kSum).WithContext("summing the loss"));
  RT_RETURN_IF_ERROR(comm->AllReduce(counts, 2, collective::ReduceOp::kSum).WithContext("counting the examples"));
  sum.correct = counts[0];
  sum.examples = counts[1];
  return sum;
}

}  // namespace ringtrain::train
