// AllReduce over shared memory: exact sums and means for 1..8 ranks and odd lengths
// (both the one-step and the chunked path, chunk boundaries included), and results that
// are bit-identical across ranks and runs and equal to the one order of additions
// (sum_order.h: the TCP ring's).
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "shm_test_util.h"

namespace ringtrain::collective {
namespace {

using shm_testing::CreateShmRanks;
using shm_testing::RunOnRanks;
using shm_testing::SameBits;
using shm_testing::ShmOptions;

// Small integers, so every partial sum is exact whatever the order.
float Input(int rank, size_t i) { return static_cast<float>((i * 13 + static_cast<size_t>(rank) * 7) % 97); }

std::vector<float> Expected(int size, size_t count, collective::ReduceOp op) {
  std::vector<float> e(count, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < size; ++r) e[i] += Input(r, i);
    if (op == collective::ReduceOp::kMean) e[i] /= static_cast<float>(size);
  }
  return e;
}

void CheckExact(int size, size_t chunk_bytes, const std::vector<size_t>& counts) {
  store::InMemoryStore store;
  auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), chunk_bytes), &store);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (collective::ReduceOp op : {collective::ReduceOp::kSum, collective::ReduceOp::kMean}) {
    for (size_t count : counts) {
      const std::vector<float> expected = Expected(size, count, op);
      std::vector<std::vector<float>> data(size);
      std::vector<Status> statuses(size);
      RunOnRanks(size, [&](int r) {
        data[r].resize(count);
        for (size_t i = 0; i < count; ++i) data[r][i] = Input(r, i);
        statuses[r] = comms[r]->AllReduce(data[r].data(), count, op);
      });
      for (int r = 0; r < size; ++r) {
        ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
        ASSERT_TRUE(SameBits(data[r], expected))
            << size << " ranks, rank " << r << ", count " << count << (op == collective::ReduceOp::kMean ? " mean" : " sum");
      }
    }
  }
}

// With 4 KiB slot buffers a chunk holds about 1024 floats (16-float parts per rank), so
// these lengths cross parts, chunks and both buffers; up to 1024 floats take the one-step path.
TEST(ShmAllReduceTest, ExactForOneToEightRanksAndOddLengths) {
  for (int size = 1; size <= 8; ++size) {
    SCOPED_TRACE("size " + std::to_string(size));
    const size_t cap = 1024 / static_cast<size_t>(size) / 16 * 16 * static_cast<size_t>(size);
    CheckExact(size, 4096,
               {0, 1, static_cast<size_t>(size) - 1, static_cast<size_t>(size) + 1, 15, 17, 1023, 1024, 1025,
                cap - 1, cap + 1, 2 * cap, 3 * cap + 5, 7 * cap - 3, 10007});
    if (::testing::Test::HasFailure()) return;
  }
}

// Default slot size: the one-step path up to 4096 floats, then 256 KiB chunks.
TEST(ShmAllReduceTest, ExactWithDefaultChunksUpToAMillionFloats) {
  for (int size : {2, 3, 8}) {
    SCOPED_TRACE("size " + std::to_string(size));
    CheckExact(size, 1 << 18, {4095, 4096, 4097, 65535, 65537, 1000003});
    if (::testing::Test::HasFailure()) return;
  }
}

// Random floats: every rank gets the same bits, equal to ((x_s + x_{s+1}) + x_{s+2}) + ...
// in ring order from the first rank of element i's segment s (divided by n for the
// mean; a vector this large is in sum_order.h's "large" case), and a second run gives
// them again.
TEST(ShmAllReduceTest, RandomFloatsAreReducedInTheRingOrderIdenticallyOnEveryRank) {
  const size_t count = 300007;
  for (int size : {3, 4}) {
    store::InMemoryStore store;
    auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), 1 << 16), &store);
    ASSERT_FALSE(HasFailure());
    std::vector<std::vector<float>> inputs(size, std::vector<float>(count));
    for (int r = 0; r < size; ++r) {
      std::mt19937 gen(1234 + r);
      std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
      for (float& x : inputs[r]) x = dist(gen);
    }
    for (collective::ReduceOp op : {collective::ReduceOp::kSum, collective::ReduceOp::kMean}) {
      // Segment s: count / n elements, one more for the first count % n; it starts at rank s.
      std::vector<float> reference(count);
      const size_t base = count / static_cast<size_t>(size), extra = count % static_cast<size_t>(size);
      for (size_t i = 0, s = 0; i < count; ++i) {
        while (i >= (s + 1) * base + std::min(s + 1, extra)) ++s;
        float acc = inputs[s][i];
        for (int j = 1; j < size; ++j) acc += inputs[(static_cast<int>(s) + j) % size][i];
        reference[i] = acc;
      }
      if (op == collective::ReduceOp::kMean) {
        for (float& x : reference) x /= static_cast<float>(size);
      }
      for (int run = 0; run < 2; ++run) {
        std::vector<std::vector<float>> data(inputs);
        RunOnRanks(size, [&](int r) { EXPECT_TRUE(comms[r]->AllReduce(data[r].data(), count, op).ok()); });
        for (int r = 0; r < size; ++r) {
          EXPECT_TRUE(SameBits(data[r], reference)) << "size " << size << " rank " << r << " run " << run;
        }
      }
    }
  }
}

// Many collectives of changing sizes in a row: the event counters and the alternating
// buffers must stay aligned across collectives and across the two AllReduce paths.
TEST(ShmAllReduceTest, ManyConsecutiveReductionsOfChangingSizes) {
  const int size = 3;
  store::InMemoryStore store;
  auto comms = CreateShmRanks(size, ShmOptions(std::chrono::seconds(30), 8192), &store);
  ASSERT_FALSE(HasFailure());
  std::mt19937 gen(7);
  std::vector<size_t> counts;
  for (int i = 0; i < 150; ++i) counts.push_back(gen() % 9000);
  std::vector<int> wrong(size, 0);
  RunOnRanks(size, [&](int r) {
    std::vector<float> data;
    for (size_t step = 0; step < counts.size(); ++step) {
      const size_t count = counts[step];
      data.assign(count, 0.0f);
      for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((i + step + static_cast<size_t>(r)) % 50);
      Status s = comms[r]->AllReduce(data.data(), count, collective::ReduceOp::kSum);
      if (!s.ok()) {
        ADD_FAILURE() << s.ToString();
        return;
      }
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int q = 0; q < size; ++q) want += static_cast<float>((i + step + static_cast<size_t>(q)) % 50);
        if (data[i] != want) ++wrong[r];
      }
    }
  });
  for (int r = 0; r < size; ++r) EXPECT_EQ(wrong[r], 0) << "rank " << r;
}

TEST(ShmAllReduceTest, SizeOneNeedsNoStore) {
  auto c = collective::internal::CreateShm(ShmOptions(), 0, 1, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<float> data = {1.0f, 2.0f, 3.0f};
  ASSERT_TRUE((*c)->AllReduce(data.data(), data.size(), collective::ReduceOp::kMean).ok());
  EXPECT_EQ(data, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  EXPECT_STREQ((*c)->backend_name(), "RING");
}

}  // namespace
}  // namespace ringtrain::collective
