// The one order of additions (sum_order.h): where the small/large switch falls (in
// bytes, so per data type), the ring's segments, each element's first rank, and that
// reducing any split of a vector in that order gives the bits of reducing it whole
// (so chunk and part sizes cannot change the result).
#include "collective/sum_order.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace ringtrain::collective {
namespace {

TEST(SumOrderTest, SmallVectorsAreSummedInRankOrder) {
  EXPECT_TRUE(SumOrder(1, 1000000, DataType::kFloat32).rank_order());  // one rank: nothing to order
  // 3 ranks switch above 32 KiB: 8192 float32 or 4096 float64 elements.
  EXPECT_TRUE(SumOrder(3, 8192, DataType::kFloat32).rank_order());
  EXPECT_FALSE(SumOrder(3, 8193, DataType::kFloat32).rank_order());
  EXPECT_TRUE(SumOrder(3, 4096, DataType::kFloat64).rank_order());
  EXPECT_FALSE(SumOrder(3, 4097, DataType::kFloat64).rank_order());
  EXPECT_EQ(SumOrder(3, 100, DataType::kFloat32).FirstRank(99), 0);
  EXPECT_EQ(SumOrder(3, 100, DataType::kFloat32).segments(), 1);
}

TEST(SumOrderTest, LargeVectorsFollowTheRingsSegments) {
  // 10001 = 3 * 3333 + 2: the first two segments hold one more.
  const SumOrder order(3, 10001, DataType::kFloat32);
  ASSERT_EQ(order.segments(), 3);
  EXPECT_EQ(order.SegmentBegin(0), 0u);
  EXPECT_EQ(order.SegmentBegin(1), 3334u);
  EXPECT_EQ(order.SegmentBegin(2), 6668u);
  EXPECT_EQ(order.SegmentBegin(3), 10001u);
  for (size_t i : {size_t{0}, size_t{3333}, size_t{3334}, size_t{6667}, size_t{6668}, size_t{10000}}) {
    const int s = i < 3334 ? 0 : i < 6668 ? 1 : 2;
    EXPECT_EQ(order.SegmentOf(i), s) << i;
    EXPECT_EQ(order.FirstRank(i), s) << i;
  }
  // Every element lies in the segment whose bounds hold it.
  const SumOrder five(5, 20003, DataType::kFloat32);
  for (size_t i = 0; i < five.count(); ++i) {
    const int s = five.SegmentOf(i);
    ASSERT_LE(five.SegmentBegin(s), i);
    ASSERT_LT(i, five.SegmentBegin(s + 1));
  }
}

TEST(SumOrderTest, AnySplitGivesTheBitsOfTheWholeAndTheDefinedOrder) {
  const int n = 4;
  const size_t count = 50001;  // large for 4 ranks
  const SumOrder order(n, count, DataType::kFloat32);
  ASSERT_FALSE(order.rank_order());
  std::vector<std::vector<float>> in(n, std::vector<float>(count));
  std::mt19937 gen(17);
  std::uniform_real_distribution<float> m(-1.0f, 1.0f);
  for (auto& v : in) {
    for (float& x : v) x = m(gen) * std::pow(10.0f, static_cast<int>(gen() % 13) - 6);
  }
  // The definition, element by element.
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    const int first = order.FirstRank(i);
    float acc = in[first][i];
    for (int j = 1; j < n; ++j) acc += in[(first + j) % n][i];
    expected[i] = acc;
  }
  std::vector<const void*> scratch(n);
  for (size_t piece : {count, size_t{4096}, size_t{1000}, size_t{7}}) {
    std::vector<float> out(count), also(count);
    for (size_t lo = 0; lo < count; lo += piece) {
      const size_t hi = std::min(count, lo + piece);
      std::vector<const void*> by_rank(n);
      for (int q = 0; q < n; ++q) by_rank[q] = in[q].data() + lo;
      internal::ReduceRangeInSumOrder(order, DataType::kFloat32, by_rank.data(), lo, hi, 0, out.data() + lo,
                                      also.data() + lo, scratch.data());
    }
    EXPECT_EQ(std::memcmp(out.data(), expected.data(), count * sizeof(float)), 0) << "pieces of " << piece;
    EXPECT_EQ(std::memcmp(also.data(), expected.data(), count * sizeof(float)), 0) << "pieces of " << piece;
  }
  // In place, with the output as rank 2's source, as shared memory reduces.
  std::vector<float> mine(in[2]);
  std::vector<const void*> by_rank = {in[0].data(), in[1].data(), mine.data(), in[3].data()};
  internal::ReduceRangeInSumOrder(order, DataType::kFloat32, by_rank.data(), 0, count, 0, mine.data(), nullptr,
                                  scratch.data());
  EXPECT_EQ(std::memcmp(mine.data(), expected.data(), count * sizeof(float)), 0);
}

}  // namespace
}  // namespace ringtrain::collective
