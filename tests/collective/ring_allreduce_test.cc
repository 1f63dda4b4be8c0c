// AllReduce on the TCP ring over 1..8 ranks: exact results for awkward lengths on both
// sides of the small/large algorithm threshold, bit-identical results on every rank,
// the same bits across runs and chunk sizes, and the documented order of additions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "collective/communicator.h"
#include "collective/ring/ring_communicator.h"
#include "ring_test_util.h"

namespace ringtrain::collective {
namespace {

using testing_util::CreateRing;
using testing_util::RunOnRanks;
using testing_util::TestOptions;

// Small integers, so every partial sum is exact in float whatever the order.
float Input(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 97 + 1)); }

// Runs one AllReduce of `count` elements on every rank and checks exact values and
// that all ranks hold the same bits.
void CheckAllReduce(std::vector<std::unique_ptr<collective::Communicator>>& comms, size_t count, collective::ReduceOp op) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<float>> data(n);
  std::vector<Status> statuses(n);
  RunOnRanks(n, [&](int r) {
    data[r].resize(count);
    for (size_t i = 0; i < count; ++i) data[r][i] = Input(r, i);
    statuses[r] = comms[r]->AllReduce(data[r].data(), count, op);
  });
  const char* op_name = op == collective::ReduceOp::kSum ? "sum" : "mean";
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << "n=" << n << " count=" << count << " rank " << r << ": "
                                  << statuses[r].ToString();
    size_t wrong = 0;
    size_t first_wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float sum = static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 97 + 1));
      float expected = op == collective::ReduceOp::kSum ? sum : sum / static_cast<float>(n);
      if (data[r][i] != expected && wrong++ == 0) first_wrong = i;
    }
    EXPECT_EQ(wrong, 0u) << op_name << " n=" << n << " count=" << count << " rank " << r << ": first wrong index "
                         << first_wrong;
    EXPECT_TRUE(count == 0 || std::memcmp(data[r].data(), data[0].data(), count * sizeof(float)) == 0)
        << op_name << " n=" << n << " count=" << count << ": rank " << r << " differs from rank 0";
  }
}

// Element counts just below, at and above the size where AllReduce switches algorithm.
std::vector<size_t> ThresholdCounts(int n) {
  const size_t small = collective::RingCommunicator::SmallAllReduceBytes(std::max(n, 2)) / sizeof(float);
  return {small - 1, small, small + 1, small + static_cast<size_t>(n) + 1};
}

TEST(RingAllReduceTest, SumAndMeanAreExactForAwkwardLengthsOnOneToEightRanks) {
  for (int n = 1; n <= 8; ++n) {
    store::InMemoryStore store;
    auto comms = CreateRing(n, TestOptions(), &store);
    ASSERT_FALSE(HasFailure());
    std::vector<size_t> counts = {0, 1, 2, size_t(n - 1), size_t(n + 1), 1000003};
    for (size_t c : ThresholdCounts(n)) counts.push_back(c);
    for (size_t count : counts) {
      CheckAllReduce(comms, count, collective::ReduceOp::kSum);
      CheckAllReduce(comms, count, collective::ReduceOp::kMean);
    }
  }
}

TEST(RingAllReduceTest, BackToBackOperationsOfMixedSizesStayInStep) {
  // Operations are not separated by any handshake: a fast rank's next operation can
  // arrive while its neighbour is still finishing this one.
  for (int n : {2, 3, 5}) {
    store::InMemoryStore store;
    auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), 4096), &store);
    ASSERT_FALSE(HasFailure());
    const std::vector<size_t> counts = {1, 70000, 3, 0, 100000, 17, 65536, 5};
    std::vector<std::vector<std::vector<float>>> results(n);
    RunOnRanks(n, [&](int r) {
      for (int round = 0; round < 3; ++round) {
        for (size_t count : counts) {
          std::vector<float> data(count);
          for (size_t i = 0; i < count; ++i) data[i] = Input(r, i + count);
          Status s = comms[r]->AllReduce(data.data(), count, collective::ReduceOp::kSum);
          ASSERT_TRUE(s.ok()) << "rank " << r << " count " << count << ": " << s.ToString();
          results[r].push_back(std::move(data));
        }
      }
    });
    ASSERT_FALSE(HasFailure());
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(results[r].size(), 3 * counts.size());
      for (size_t op = 0; op < results[r].size(); ++op) {
        const size_t count = counts[op % counts.size()];
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
          wrong += results[r][op][i] != static_cast<float>(n * (n + 1) / 2 * static_cast<int>((i + count) % 97 + 1));
        }
        EXPECT_EQ(wrong, 0u) << "n=" << n << " rank " << r << " operation " << op << " count " << count;
      }
    }
  }
}

TEST(RingAllReduceTest, TinyChunksForceManyPartialChunks) {
  for (int n : {2, 3, 4, 7}) {
    // 6 is not a multiple of sizeof(float); the ring rounds it down to 4.
    for (size_t chunk : {size_t{64}, size_t{6}}) {
      store::InMemoryStore store;
      auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), chunk), &store);
      ASSERT_FALSE(HasFailure());
      for (size_t count : {size_t{5}, size_t{17}, size_t{10007}, size_t{70001}}) {
        CheckAllReduce(comms, count, collective::ReduceOp::kSum);
        CheckAllReduce(comms, count, collective::ReduceOp::kMean);
      }
    }
  }
}

std::vector<float> RandomInput(int rank, size_t count) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen) * std::pow(10.0f, static_cast<float>(static_cast<int>(gen() % 7) - 3));
  return v;
}

std::vector<std::vector<float>> RunRandomAllReduce(int n, size_t count, size_t chunk, collective::ReduceOp op) {
  store::InMemoryStore store;
  auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), chunk), &store);
  std::vector<std::vector<float>> data(n);
  RunOnRanks(n, [&](int r) {
    data[r] = RandomInput(r, count);
    Status s = comms[r]->AllReduce(data[r].data(), count, op);
    EXPECT_TRUE(s.ok()) << s.ToString();
  });
  return data;
}

TEST(RingAllReduceTest, RandomFloatsGiveIdenticalBitsAcrossRanksRunsAndChunkSizes) {
  for (int n : {2, 4}) {
    // Large (pipelined ring) and small (all-gather) algorithm.
    for (size_t count : {size_t{100003}, size_t{1001}}) {
      for (collective::ReduceOp op : {collective::ReduceOp::kSum, collective::ReduceOp::kMean}) {
        auto first = RunRandomAllReduce(n, count, 1 << 18, op);
        auto second = RunRandomAllReduce(n, count, 4096, op);
        ASSERT_FALSE(HasFailure());
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(0, std::memcmp(first[r].data(), first[0].data(), count * sizeof(float))) << "rank " << r;
          EXPECT_EQ(0, std::memcmp(second[r].data(), first[0].data(), count * sizeof(float))) << "rank " << r;
        }
      }
    }
  }
}

// The contract is determinism; these pin down the orders that give it.
TEST(RingAllReduceTest, SmallSumAddsInRankOrder) {
  for (int n : {2, 3, 5}) {
    const size_t count = 10;
    auto result = RunRandomAllReduce(n, count, 1 << 18, collective::ReduceOp::kSum);
    ASSERT_FALSE(HasFailure());
    std::vector<std::vector<float>> inputs(n);
    for (int r = 0; r < n; ++r) inputs[r] = RandomInput(r, count);
    for (size_t i = 0; i < count; ++i) {
      float acc = inputs[0][i];
      for (int r = 1; r < n; ++r) acc += inputs[r][i];
      for (int r = 0; r < n; ++r) EXPECT_EQ(0, std::memcmp(&acc, &result[r][i], sizeof(float))) << "index " << i;
    }
  }
}

TEST(RingAllReduceTest, LargeSumFollowsTheFixedRingOrder) {
  // Segment s starts at rank s and accumulates ranks s+1, s+2, ... around the ring.
  for (int n : {3, 5}) {
    const size_t count = collective::RingCommunicator::SmallAllReduceBytes(n) / sizeof(float) + 7;
    auto result = RunRandomAllReduce(n, count, 1 << 12, collective::ReduceOp::kSum);
    ASSERT_FALSE(HasFailure());
    std::vector<std::vector<float>> inputs(n);
    for (int r = 0; r < n; ++r) inputs[r] = RandomInput(r, count);
    const size_t base = count / n, extra = count % n;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      int segment = 0;
      while (!(i < (segment + 1) * base + std::min<size_t>(segment + 1, extra))) ++segment;
      float acc = inputs[segment][i];
      for (int j = 1; j < n; ++j) acc += inputs[(segment + j) % n][i];
      for (int r = 0; r < n; ++r) wrong += std::memcmp(&acc, &result[r][i], sizeof(float)) != 0;
    }
    EXPECT_EQ(wrong, 0u) << "n=" << n;
  }
}

}  // namespace
}  // namespace ringtrain::collective
