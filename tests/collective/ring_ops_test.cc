// Broadcast, AllGather and Barrier on the TCP ring over 1..8 ranks, and detection of
// ranks that issue different collectives.
#include <atomic>
#include <cstring>
#include <functional>

#include "collective/communicator.h"
#include "ring_test_util.h"

namespace ringtrain::collective {
namespace {

using testing_util::CreateRing;
using testing_util::RunOnRanks;
using testing_util::TestOptions;

float Value(int rank, size_t i) { return static_cast<float>(rank * 1000003 + static_cast<int>(i % 100000)); }

TEST(RingBroadcastTest, EveryRootReachesEveryRank) {
  for (int n = 1; n <= 8; ++n) {
    store::InMemoryStore store;
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
  store::InMemoryStore store;
  auto comms = CreateRing(1, TestOptions(), &store);
  ASSERT_FALSE(HasFailure());
  float x = 1;
  EXPECT_EQ(comms[0]->Broadcast(&x, 1, 1).code(), Code::kInvalidArgument);
}

TEST(RingAllGatherTest, GathersEveryRanksBlockInRankOrder) {
  for (int n = 1; n <= 8; ++n) {
    store::InMemoryStore store;
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
  for (int n = 1; n <= 8; ++n) {
    store::InMemoryStore store;
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

// Rank 0 runs `first`, every other rank `others`. Rank 1 receives rank 0's header and
// must fail with FAILED_PRECONDITION ("collective mismatch"); so must rank 0 on a ring
// of 2, where the rank it receives from is the one it sends to. On larger rings rank 0
// may instead see rank 1 give up before rank n-1's header arrives (UNAVAILABLE naming
// rank 1). The others must return (no hang): with UNAVAILABLE once a neighbour gives
// up, or OK when their own part could complete (a broadcast relay that received all
// of its data from a rank issuing the same operation).
void CheckMismatch(int n, const std::function<Status(collective::Communicator&)>& first,
                   const std::function<Status(collective::Communicator&)>& others) {
  store::InMemoryStore store;
  auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10)), &store);
  for (const auto& c : comms) ASSERT_NE(c, nullptr);
  std::vector<Status> statuses(n);
  RunOnRanks(n, [&](int r) { statuses[r] = r == 0 ? first(*comms[r]) : others(*comms[r]); });
  for (int r = 0; r < n; ++r) {
    if (r == 1 || (r == 0 && n == 2)) {
      EXPECT_EQ(statuses[r].code(), Code::kFailedPrecondition) << "n=" << n << " rank " << r << ": "
                                                               << statuses[r].ToString();
      EXPECT_NE(statuses[r].message().find("collective mismatch"), std::string::npos) << statuses[r].ToString();
    } else if (r == 0) {
      EXPECT_TRUE(statuses[r].code() == Code::kFailedPrecondition ||
                  (statuses[r].code() == Code::kUnavailable && statuses[r].message().find("rank 1") != std::string::npos))
          << "n=" << n << " rank 0: " << statuses[r].ToString();
    } else {
      EXPECT_TRUE(statuses[r].ok() || statuses[r].code() == Code::kFailedPrecondition ||
                  statuses[r].code() == Code::kUnavailable)
          << "n=" << n << " rank " << r << ": " << statuses[r].ToString();
    }
  }
  // Broken for good.
  EXPECT_EQ(comms[0]->Barrier().code(), statuses[0].code());
}

TEST(RingMismatchTest, DifferentCollectivesFailWithFailedPrecondition) {
  auto allreduce = [&](size_t count) {
    return [count](collective::Communicator& c) {
      std::vector<float> data(count, 1.0f);
      return c.AllReduce(data.data(), count, collective::ReduceOp::kSum);
    };
  };
  auto broadcast = [](size_t count, int root) {
    return [count, root](collective::Communicator& c) {
      std::vector<float> data(count, 1.0f);
      return c.Broadcast(data.data(), count, root);
    };
  };
  auto barrier = [](collective::Communicator& c) { return c.Barrier(); };
  const size_t large = 1 << 20;
  for (int n : {2, 3}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    CheckMismatch(n, allreduce(10), broadcast(10, 0));
    CheckMismatch(n, allreduce(10), allreduce(11));           // small, different counts
    CheckMismatch(n, allreduce(large), allreduce(large + 1));  // large, different counts
    CheckMismatch(n, allreduce(large), broadcast(large, 1));
    CheckMismatch(n, broadcast(5, 0), broadcast(5, 1));  // different roots
    CheckMismatch(n, barrier, allreduce(1));
  }
}

TEST(RingMismatchTest, MismatchMessageNamesBothOperations) {
  store::InMemoryStore store;
  auto comms = CreateRing(2, TestOptions(std::chrono::seconds(5)), &store);
  ASSERT_FALSE(HasFailure());
  std::vector<Status> statuses(2);
  RunOnRanks(2, [&](int r) {
    std::vector<float> data(10, 1.0f);
    statuses[r] = r == 0 ? comms[r]->AllReduce(data.data(), data.size(), collective::ReduceOp::kSum)
                         : comms[r]->Broadcast(data.data(), data.size(), 0);
  });
  EXPECT_NE(statuses[0].message().find("rank 1 (127.0.0.1:"), std::string::npos) << statuses[0].ToString();
  EXPECT_NE(statuses[0].message().find("issued Broadcast(count=10, float32, root=0) as operation #0"),
            std::string::npos)
      << statuses[0].ToString();
  EXPECT_NE(statuses[0].message().find("rank 0 issued AllReduce(count=10, float32, sum) as operation #0"),
            std::string::npos)
      << statuses[0].ToString();
}

}  // namespace
}  // namespace ringtrain::collective
