// Broadcast, AllGather and Barrier over 1..5 ranks, and collective-mismatch detection.
#include <atomic>
#include <cstring>

#include "collective/communicator.h"
#include "ring_test_util.h"

namespace ringtrain {
namespace {

using testing_util::CreateRing;
using testing_util::RunOnRanks;
using testing_util::TestOptions;

float Value(int rank, size_t i) { return static_cast<float>(rank * 1000003 + static_cast<int>(i % 100000)); }

TEST(RingBroadcastTest, EveryRootReachesEveryRank) {
  for (int n = 1; n <= 5; ++n) {
    InMemoryStore store;
    // Small chunks so that relaying ranks forward many partial chunks.
    auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), 64), &store);
    ASSERT_FALSE(HasFailure());
    for (int root = 0; root < n; ++root) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{10007}}) {
        std::vector<std::vector<float>> data(n);
        std::vector<Status> statuses(n);
        RunOnRanks(n, [&](int r) {
          data[r].resize(count);
          for (size_t i = 0; i < count; ++i) data[r][i] = Value(r, i);
          statuses[r] = comms[r]->Broadcast(data[r].data(), count, root);
        });
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) wrong += data[r][i] != Value(root, i);
          EXPECT_EQ(wrong, 0u) << "n=" << n << " root=" << root << " count=" << count << " rank " << r;
        }
      }
    }
  }
}

TEST(RingBroadcastTest, RootOutOfRangeIsInvalidArgument) {
  InMemoryStore store;
  auto comms = CreateRing(1, TestOptions(), &store);
  ASSERT_FALSE(HasFailure());
  float x = 1;
  EXPECT_EQ(comms[0]->Broadcast(&x, 1, 1).code(), Code::kInvalidArgument);
}

TEST(RingAllGatherTest, GathersEveryRanksBlockInRankOrder) {
  for (int n = 1; n <= 5; ++n) {
    InMemoryStore store;
    auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), 64), &store);
    ASSERT_FALSE(HasFailure());
    for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{1001}}) {
      std::vector<std::vector<float>> out(n);
      std::vector<Status> statuses(n);
      RunOnRanks(n, [&](int r) {
        std::vector<float> in(count);
        for (size_t i = 0; i < count; ++i) in[i] = Value(r, i);
        out[r].assign(count * n, -1.0f);
        statuses[r] = comms[r]->AllGather(in.data(), count, out[r].data());
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
        size_t wrong = 0;
        for (int src = 0; src < n; ++src) {
          for (size_t i = 0; i < count; ++i) wrong += out[r][src * count + i] != Value(src, i);
        }
        EXPECT_EQ(wrong, 0u) << "n=" << n << " count=" << count << " rank " << r;
      }
    }
  }
}

TEST(RingBarrierTest, NoRankLeavesBeforeAllArrive) {
  for (int n = 1; n <= 5; ++n) {
    InMemoryStore store;
    auto comms = CreateRing(n, TestOptions(), &store);
    ASSERT_FALSE(HasFailure());
    constexpr int kRounds = 20;
    std::atomic<int> arrived[kRounds] = {};
    std::atomic<int> early_leavers{0};
    RunOnRanks(n, [&](int r) {
      for (int round = 0; round < kRounds; ++round) {
        arrived[round].fetch_add(1);
        Status s = comms[r]->Barrier();
        EXPECT_TRUE(s.ok()) << s.ToString();
        if (arrived[round].load() != n) early_leavers.fetch_add(1);
      }
    });
    EXPECT_EQ(early_leavers.load(), 0) << "n=" << n;
  }
}

TEST(RingMismatchTest, DifferentCollectivesFailWithFailedPrecondition) {
  InMemoryStore store;
  auto comms = CreateRing(2, TestOptions(std::chrono::seconds(5)), &store);
  ASSERT_FALSE(HasFailure());
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(10, 1.0f);
    statuses[r] = r == 0 ? comms[r]->AllReduce(data.data(), data.size(), ReduceOp::kSum)
                         : comms[r]->Broadcast(data.data(), data.size(), 0);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(statuses[r].code(), Code::kFailedPrecondition) << statuses[r].ToString();
    EXPECT_NE(statuses[r].message().find("collective mismatch"), std::string::npos) << statuses[r].ToString();
  }
}

}  // namespace
}  // namespace ringtrain
