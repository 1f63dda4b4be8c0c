// AllReduce of every data type on every host backend (TCP ring, shared memory, one
// rank) at 1-4 ranks: integer sums exact and wrapped modulo 2^bits (int64 above 2^53,
// uint8 past 255), float sums and means bit-identical on every rank and equal to the
// documented order of additions, on both sides of each algorithm's size threshold.
#include <cstring>
#include <limits>

#include "typed_test_util.h"

namespace ringtrain::collective {
namespace {

using typed_testing::AllSetups;
using typed_testing::Backend;
using typed_testing::Expected;
using typed_testing::Inputs;
using typed_testing::MakeRanks;
using typed_testing::SameBits;
using typed_testing::RankSetup;

template <typename T>
class TypedAllReduceTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, double, int32_t, int64_t, uint8_t>;
TYPED_TEST_SUITE(TypedAllReduceTest, ElementTypes);

// Counts around every threshold: the ring's small/large switch (in bytes, so at a
// different count per type), shared memory's one-step path (16 KiB) and chunks.
template <typename T>
std::vector<size_t> Counts(int n) {
  const size_t ring_small = RingCommunicator::SmallAllReduceBytes(std::max(n, 2)) / sizeof(T);
  const size_t shm_small = (16u << 10) / sizeof(T);
  return {0, 1, 7, 1000, shm_small, shm_small + 1, ring_small, ring_small + 1, 100003};
}

template <typename T>
void CheckAllReduce(const RankSetup& setup, std::vector<std::unique_ptr<Communicator>>& comms, size_t count,
                    ReduceOp op, uint32_t salt) {
  const int n = setup.ranks;
  std::vector<std::vector<T>> in(n), data(n);
  for (int r = 0; r < n; ++r) in[r] = data[r] = Inputs<T>(r, count, salt);
  std::vector<Status> statuses(n);
  testing_util::RunOnRanks(n, [&](int r) { statuses[r] = comms[r]->AllReduce(data[r].data(), count, op); });
  const std::vector<T> expected = Expected(in, setup.backend, count, op);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r].ToString();
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < count; ++i) {
      if (std::memcmp(&data[r][i], &expected[i], sizeof(T)) != 0 && wrong++ == 0) first = i;
    }
    ASSERT_EQ(wrong, 0u) << typed_testing::Describe(setup) << ", " << DataTypeName(DataTypeOf<T>()) << " "
                         << ReduceOpName(op) << " of " << count << ": rank " << r << " first differs at " << first;
  }
}

TYPED_TEST(TypedAllReduceTest, SumIsExactOrInTheDocumentedOrderOnEveryBackend) {
  using T = TypeParam;
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store);
    ASSERT_FALSE(this->HasFailure()) << typed_testing::Describe(setup);
    uint32_t salt = 0;
    for (size_t count : Counts<T>(setup.ranks)) {
      CheckAllReduce<T>(setup, comms, count, ReduceOp::kSum, ++salt);
      if constexpr (std::is_floating_point_v<T>) CheckAllReduce<T>(setup, comms, count, ReduceOp::kMean, ++salt);
      if (this->HasFailure()) return;
    }
  }
}

TEST(TypedAllReduceValuesTest, Int64SumsAbove2To53AreExact) {
  // 2^53 + 1 is not a double; three ranks' sum must come out to the last unit.
  const int64_t big = (int64_t{1} << 53) + 1;
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store);
    ASSERT_FALSE(HasFailure());
    const int n = setup.ranks;
    std::vector<std::vector<int64_t>> data(n);
    testing_util::RunOnRanks(n, [&](int r) {
      data[r] = {big + r, -big, std::numeric_limits<int64_t>::max()};
      EXPECT_TRUE(comms[r]->AllReduce(data[r].data(), data[r].size(), ReduceOp::kSum).ok());
    });
    // n * (2^63 - 1) wraps modulo 2^64.
    const int64_t wrapped = static_cast<int64_t>(static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) *
                                                 static_cast<uint64_t>(n));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(data[r][0], n * big + n * (n - 1) / 2) << typed_testing::Describe(setup);
      EXPECT_EQ(data[r][1], -n * big) << typed_testing::Describe(setup);
      EXPECT_EQ(data[r][2], wrapped) << typed_testing::Describe(setup);
    }
  }
}

TEST(TypedAllReduceValuesTest, Uint8SumsWrapAt256) {
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store);
    ASSERT_FALSE(HasFailure());
    const int n = setup.ranks;
    std::vector<std::vector<uint8_t>> data(n);
    testing_util::RunOnRanks(n, [&](int r) {
      data[r] = {200, 255, static_cast<uint8_t>(r)};
      EXPECT_TRUE(comms[r]->AllReduce(data[r].data(), data[r].size(), ReduceOp::kSum).ok());
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(data[r][0], static_cast<uint8_t>(200 * n)) << typed_testing::Describe(setup);
      EXPECT_EQ(data[r][1], static_cast<uint8_t>(255 * n)) << typed_testing::Describe(setup);
      EXPECT_EQ(data[r][2], static_cast<uint8_t>(n * (n - 1) / 2)) << typed_testing::Describe(setup);
    }
  }
}

// Collectives of different types back to back: each operation's type and size travel
// with it, so ranks stay in step whatever mix they issue.
TEST(TypedAllReduceValuesTest, MixedTypesBackToBackStayInStep) {
  for (const RankSetup& setup : AllSetups()) {
    store::InMemoryStore store;
    auto comms = MakeRanks(setup, &store, 4096);
    ASSERT_FALSE(HasFailure());
    const int n = setup.ranks;
    std::vector<int> wrong(n, 0);
    testing_util::RunOnRanks(n, [&](int r) {
      for (int round = 0; round < 20; ++round) {
        const size_t count = static_cast<size_t>(round * 997 % 20011);
        std::vector<double> d(count, 0.5 * (r + 1));
        std::vector<int64_t> i(count, (int64_t{1} << 40) * (r + 1));
        std::vector<uint8_t> u(count + 3, static_cast<uint8_t>(100 + r));
        std::vector<float> f(count / 2, 1.0f);
        if (!comms[r]->AllReduce(d.data(), d.size(), ReduceOp::kSum).ok() ||
            !comms[r]->AllReduce(i.data(), i.size(), ReduceOp::kSum).ok() ||
            !comms[r]->AllReduce(u.data(), u.size(), ReduceOp::kSum).ok() ||
            !comms[r]->AllReduce(f.data(), f.size(), ReduceOp::kMean).ok()) {
          ADD_FAILURE() << "rank " << r << " round " << round;
          return;
        }
        for (double x : d) wrong[r] += x != 0.5 * n * (n + 1) / 2;
        for (int64_t x : i) wrong[r] += x != (int64_t{1} << 40) * n * (n + 1) / 2;
        for (uint8_t x : u) wrong[r] += x != static_cast<uint8_t>(100 * n + n * (n - 1) / 2);
        for (float x : f) wrong[r] += x != 1.0f;
      }
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(wrong[r], 0) << typed_testing::Describe(setup) << " rank " << r;
  }
}

}  // namespace
}  // namespace ringtrain::collective
