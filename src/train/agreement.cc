#include "train/agreement.h"

#include <algorithm>
#include <vector>

namespace ringtrain::train {

StatusOr<FurthestWorker> FindFurthestWorker(collective::Communicator* comm, int64_t step,
                                            uint64_t state_fingerprint) {
  const int64_t mine[2] = {step, static_cast<int64_t>(state_fingerprint)};
  std::vector<int64_t> all(2 * static_cast<size_t>(comm->size()));
  RT_RETURN_IF_ERROR(comm->AllGather(mine, 2, all.data()).WithContext("comparing the workers' steps"));
  FurthestWorker best;
  best.all_same_state = true;
  for (int r = 0; r < comm->size(); ++r) {
    const int64_t s = all[2 * static_cast<size_t>(r)];
    if (r == 0 || s > best.step) best = {r, s, best.all_same_state};
    if (s != all[0] || all[2 * static_cast<size_t>(r) + 1] != all[1]) best.all_same_state = false;
  }
  return best;
}

StatusOr<std::vector<int>> RanksAskingToStop(collective::Communicator* comm, bool asked) {
  const int64_t mine = asked ? 1 : 0;
  std::vector<int64_t> all(static_cast<size_t>(comm->size()));
  RT_RETURN_IF_ERROR(comm->AllGather(&mine, 1, all.data()).WithContext("agreeing on a stop request"));
  std::vector<int> ranks;
  for (int r = 0; r < comm->size(); ++r) {
    if (all[static_cast<size_t>(r)] != 0) ranks.push_back(r);
  }
  return ranks;
}

StatusOr<int64_t> SmallestOverWorkers(collective::Communicator* comm, int64_t value) {
  std::vector<int64_t> values(static_cast<size_t>(comm->size()));
  RT_RETURN_IF_ERROR(comm->AllGather(&value, 1, values.data()));
  return *std::min_element(values.begin(), values.end());
}

StatusOr<MetricSums> SumOverWorkers(collective::Communicator* comm, const MetricSums& mine, size_t num_sums) {
  MetricSums sum = mine;
  if (sum.metric_sums.empty()) sum.metric_sums.assign(num_sums, 0.0);
  if (sum.metric_sums.size() != num_sums) {
    return InternalError("metric sums of " + std::to_string(sum.metric_sums.size()) + " values, expected " +
                         std::to_string(num_sums));
  }
  RT_RETURN_IF_ERROR(comm->AllReduce(&sum.loss_sum, 1, collective::ReduceOp::kSum).WithContext("summing the loss"));
  if (num_sums > 0) {
    RT_RETURN_IF_ERROR(comm->AllReduce(sum.metric_sums.data(), num_sums, collective::ReduceOp::kSum)
                           .WithContext("summing the metrics"));
  }
  RT_RETURN_IF_ERROR(comm->AllReduce(&sum.examples, 1, collective::ReduceOp::kSum).WithContext("counting the examples"));
  return sum;
}

}  // namespace ringtrain::train
