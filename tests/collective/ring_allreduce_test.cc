// AllReduce over 1..5 ranks: exact results for awkward lengths, bit-identical results
// on every rank, and the same bits across runs and chunk sizes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "collective/communicator.h"
#include "ring_test_util.h"

namespace ringtrain {
namespace {

using testing_util::CreateRing;
using testing_util::RunOnRanks;
using testing_util::TestOptions;

// Small integers, so every partial sum is exact in float whatever the order.
float Input(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 97 + 1)); }

// Runs one AllReduce of `count` elements on every rank and checks exact values and
// that all ranks hold the same bits.
void CheckAllReduce(std::vector<std::unique_ptr<Communicator>>& comms, size_t count, ReduceOp op) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::vector<float>> data(n);
  std::vector<Status> statuses(n);
  RunOnRanks(n, [&](int r) {
    data[r].resize(count);
    for (size_t i = 0; i < count; ++i) data[r][i] = Input(r, i);
    statuses[r] = comms[r]->AllReduce(data[r].data(), count, op);
  });
  const char* op_name = op == ReduceOp::kSum ? "sum" : "mean";
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << "n=" << n << " count=" << count << " rank " << r << ": "
                                  << statuses[r].ToString();
    size_t wrong = 0;
    size_t first_wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float sum = static_cast<float>(n * (n + 1) / 2 * static_cast<int>(i % 97 + 1));
      float expected = op == ReduceOp::kSum ? sum : sum / static_cast<float>(n);
      if (data[r][i] != expected && wrong++ == 0) first_wrong = i;
    }
    EXPECT_EQ(wrong, 0u) << op_name << " n=" << n << " count=" << count << " rank " << r << ": first wrong index "
                         << first_wrong;
    EXPECT_TRUE(count == 0 || std::memcmp(data[r].data(), data[0].data(), count * sizeof(float)) == 0)
        << op_name << " n=" << n << " count=" << count << ": rank " << r << " differs from rank 0";
  }
}

TEST(RingAllReduceTest, SumAndMeanAreExactForAwkwardLengthsOnOneToFiveRanks) {
  for (int n = 1; n <= 5; ++n) {
    InMemoryStore store;
    auto comms = CreateRing(n, TestOptions(), &store);
    ASSERT_FALSE(HasFailure());
    for (size_t count : {size_t{0}, size_t{1}, size_t{2}, size_t(n - 1), size_t(n + 1), size_t{1000003}}) {
      CheckAllReduce(comms, count, ReduceOp::kSum);
      CheckAllReduce(comms, count, ReduceOp::kMean);
    }
  }
}

TEST(RingAllReduceTest, TinyChunksForceManyPartialChunks) {
  for (int n : {2, 3, 4}) {
    // 6 is not a multiple of sizeof(float); the ring rounds it down to 4.
    for (size_t chunk : {size_t{64}, size_t{6}}) {
      InMemoryStore store;
      auto comms = CreateRing(n, TestOptions(std::chrono::seconds(10), chunk), &store);
      ASSERT_FALSE(HasFailure());
      for (size_t count : {size_t{5}, size_t{17}, size_t{10007}}) {
        CheckAllReduce(comms, count, ReduceOp::kSum);
        CheckAllReduce(comms, count, ReduceOp::kMean);
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

std::vector<std::vector<float>> RunRandomAllReduce(int n, size_t count, size_t chunk, ReduceOp op) {
  InMemoryStore store;
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
  const int n = 4;
  const size_t count = 100003;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    auto first = RunRandomAllReduce(n, count, 1 << 18, op);
    auto second = RunRandomAllReduce(n, count, 4096, op);
    ASSERT_FALSE(HasFailure());
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(0, std::memcmp(first[r].data(), first[0].data(), count * sizeof(float))) << "rank " << r;
      EXPECT_EQ(0, std::memcmp(second[r].data(), first[0].data(), count * sizeof(float))) << "rank " << r;
    }
  }
}

TEST(RingAllReduceTest, SumFollowsTheFixedRingOrder) {
  // The contract is determinism; this pins down the order that gives it: segment s
  // starts at rank s and accumulates ranks s+1, s+2, ... around the ring.
  const int n = 3;
  const size_t count = 10;
  auto result = RunRandomAllReduce(n, count, 1 << 18, ReduceOp::kSum);
  ASSERT_FALSE(HasFailure());
  std::vector<std::vector<float>> inputs(n);
  for (int r = 0; r < n; ++r) inputs[r] = RandomInput(r, count);
  for (size_t i = 0; i < count; ++i) {
    size_t base = count / n, extra = count % n;
    int segment = 0;
    while (!(i < (segment + 1) * base + std::min<size_t>(segment + 1, extra))) ++segment;
    float acc = inputs[segment][i];
    for (int j = 1; j < n; ++j) acc += inputs[(segment + j) % n][i];
    EXPECT_EQ(0, std::memcmp(&acc, &result[0][i], sizeof(float))) << "index " << i;
  }
}

}  // namespace
}  // namespace ringtrain
