// What the workers agree on through typed collectives (train/agreement.h), with values
// a float cannot hold: counts and steps above 2^24 stay exact, where the float32
// collectives they replaced rounded them (2^24 + 1 became 2^24).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "train/agreement.h"
#include "train/rank_threads.h"

namespace ringtrain::train {
namespace {

constexpr int64_t k2To24 = int64_t{1} << 24;

TEST(AgreementTest, MetricSumsAreExactPast2To24) {
  for (int n : {2, 3}) {
    std::vector<MetricSums> got(static_cast<size_t>(n));
    std::vector<Status> st = RunRanks(n, [&](int rank, collective::Communicator* comm) -> Status {
      // Each worker saw 2^24 + rank + 1 correct answers of 2^32 + 2 * rank + 1 examples,
      // and a second metric's fractional sum.
      MetricSums mine{0.1 * (rank + 1),
                      {static_cast<double>(k2To24 + rank + 1), 0.25 * (rank + 1)},
                      (int64_t{1} << 32) + 2 * rank + 1};
      RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], SumOverWorkers(comm, mine, 2));
      return Status::Ok();
    });
    int64_t correct = 0, examples = 0;
    double loss = 0, second = 0;
    for (int r = 0; r < n; ++r) {
      second += 0.25 * (r + 1);
      correct += k2To24 + r + 1;
      examples += (int64_t{1} << 32) + 2 * r + 1;
      loss = r == 0 ? 0.1 : loss + 0.1 * (r + 1);  // rank order, in float64
    }
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
      const MetricSums& g = got[static_cast<size_t>(r)];
      ASSERT_EQ(g.metric_sums.size(), 2u);
      EXPECT_EQ(g.metric_sums[0], static_cast<double>(correct)) << n << " workers, rank " << r;
      EXPECT_EQ(static_cast<int64_t>(g.metric_sums[0]), correct) << "exact in double";
      EXPECT_EQ(g.metric_sums[1], second) << n << " workers, rank " << r;
      EXPECT_EQ(g.examples, examples) << n << " workers, rank " << r;
      EXPECT_EQ(g.loss_sum, loss) << n << " workers, rank " << r;  // bit-identical on every worker
    }
    // The counts a float would have mangled.
    EXPECT_NE(static_cast<int64_t>(static_cast<float>(correct)), correct);
  }
}

// Preemption: a stop request on any worker is seen by every worker at the same call, with
// who asked; none asking gives an empty list everywhere.
TEST(AgreementTest, EveryWorkerLearnsWhoAskedToStop) {
  const int n = 3;
  for (const std::vector<int>& asking : {std::vector<int>{}, {1}, {0, 2}, {0, 1, 2}}) {
    std::vector<std::vector<int>> got(n);
    std::vector<Status> st = RunRanks(n, [&](int rank, collective::Communicator* comm) -> Status {
      const bool asked = std::find(asking.begin(), asking.end(), rank) != asking.end();
      RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], RanksAskingToStop(comm, asked));
      return Status::Ok();
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
      EXPECT_EQ(got[static_cast<size_t>(r)], asking) << "rank " << r;
    }
  }
}

TEST(AgreementTest, EmptyMetricSumsCountAsZeros) {
  std::vector<MetricSums> got(2);
  std::vector<Status> st = RunRanks(2, [&](int rank, collective::Communicator* comm) -> Status {
    MetricSums mine{1.0, rank == 0 ? std::vector<double>{} : std::vector<double>{3.0, 4.0, 5.0}, 2};
    RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], SumOverWorkers(comm, mine, 3));
    return Status::Ok();
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
    EXPECT_EQ(got[static_cast<size_t>(r)].metric_sums, (std::vector<double>{3.0, 4.0, 5.0}));
    EXPECT_EQ(got[static_cast<size_t>(r)].examples, 4);
  }
}

TEST(AgreementTest, FurthestWorkerComparesStepsPast2To24) {
  // Steps 2^24 + 1 and 2^24 + 2 are one float apart: the later one must win.
  std::vector<FurthestWorker> got(3);
  std::vector<int64_t> steps = {k2To24 + 1, k2To24 + 2, k2To24 + 2};
  std::vector<Status> st = RunRanks(3, [&](int rank, collective::Communicator* comm) -> Status {
    RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], FindFurthestWorker(comm, steps[static_cast<size_t>(rank)], 7));
    return Status::Ok();
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
    EXPECT_EQ(got[static_cast<size_t>(r)].rank, 1) << "the lowest rank among the furthest, on rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)].step, k2To24 + 2);
  }
  // Far beyond 2^53 too.
  steps = {int64_t{1} << 60, (int64_t{1} << 60) + 1, 0};
  st = RunRanks(3, [&](int rank, collective::Communicator* comm) -> Status {
    RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], FindFurthestWorker(comm, steps[static_cast<size_t>(rank)], 7));
    return Status::Ok();
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
    EXPECT_EQ(got[static_cast<size_t>(r)].rank, 1);
    EXPECT_EQ(got[static_cast<size_t>(r)].step, (int64_t{1} << 60) + 1);
    EXPECT_FALSE(got[static_cast<size_t>(r)].all_same_state);
  }
}

TEST(AgreementTest, FurthestWorkerSaysWhetherEveryStateIsTheSame) {
  struct Case {
    std::vector<int64_t> steps;
    std::vector<uint64_t> fingerprints;
    bool same;
  };
  const std::vector<Case> cases = {
      {{0, 0, 0}, {0xabcdef0123456789ULL, 0xabcdef0123456789ULL, 0xabcdef0123456789ULL}, true},
      {{0, 0, 0}, {5, 5, 6}, false},       // one state differs
      {{3, 3, 4}, {5, 5, 5}, false},       // the same fingerprint at another step
      {{9, 9, 9}, {1ULL << 63, 1ULL << 63, 1ULL << 63}, true},
  };
  for (const Case& c : cases) {
    std::vector<FurthestWorker> got(3);
    std::vector<Status> st = RunRanks(3, [&](int rank, collective::Communicator* comm) -> Status {
      const auto r = static_cast<size_t>(rank);
      RT_ASSIGN_OR_RETURN(got[r], FindFurthestWorker(comm, c.steps[r], c.fingerprints[r]));
      return Status::Ok();
    });
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
      EXPECT_EQ(got[static_cast<size_t>(r)].all_same_state, c.same) << "rank " << r;
      EXPECT_EQ(got[static_cast<size_t>(r)].step, *std::max_element(c.steps.begin(), c.steps.end()));
    }
  }
}

TEST(AgreementTest, SmallestShardIsExactPast2To24) {
  // As floats, 2^24 + 1 and 2^24 + 3 became 2^24 and 2^24 + 4: the smallest came out as
  // a size no worker has.
  std::vector<int64_t> got(2, -1);
  const int64_t sizes[2] = {k2To24 + 3, k2To24 + 1};
  std::vector<Status> st = RunRanks(2, [&](int rank, collective::Communicator* comm) -> Status {
    RT_ASSIGN_OR_RETURN(got[static_cast<size_t>(rank)], SmallestOverWorkers(comm, sizes[rank]));
    return Status::Ok();
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(st[static_cast<size_t>(r)].ok()) << st[static_cast<size_t>(r)].ToString();
    EXPECT_EQ(got[static_cast<size_t>(r)], k2To24 + 1);
  }
}

}  // namespace
}  // namespace ringtrain::train
