// The benchmark's result check accepts exactly the true sum and names the first
// element that is not.
#include <gtest/gtest.h>

#include <vector>

#include "bench/result_check.h"

namespace ringtrain::bench {
namespace {

// What a correct all-reduce of `ranks` contributions produces.
std::vector<float> TrueSum(size_t count, int ranks, int iteration) {
  std::vector<float> sum(count, 0.0f), part(count);
  for (int r = 0; r < ranks; ++r) {
    FillContribution(part.data(), count, r, iteration);
    for (size_t i = 0; i < count; ++i) sum[i] += part[i];
  }
  return sum;
}

TEST(ResultCheckTest, AcceptsTheSumOverRanks) {
  for (int ranks : {1, 2, 3, 8, kMaxCheckedRanks}) {
    auto sum = TrueSum(10007, ranks, 3);
    EXPECT_TRUE(CheckSum(sum.data(), sum.size(), ranks, 3).ok()) << ranks << " ranks";
  }
}

TEST(ResultCheckTest, ContributionsDependOnRankIndexAndIteration) {
  std::vector<float> a(64), b(64), c(64);
  FillContribution(a.data(), a.size(), 0, 0);
  FillContribution(b.data(), b.size(), 1, 0);
  FillContribution(c.data(), c.size(), 0, 1);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  int distinct_neighbours = 0;
  for (size_t i = 1; i < a.size(); ++i) distinct_neighbours += a[i] != a[i - 1];
  EXPECT_GT(distinct_neighbours, 32);  // not constant, so shifted chunks show
  for (float v : a) EXPECT_TRUE(v >= 1 && v <= 64) << v;
}

TEST(ResultCheckTest, NamesTheFirstWrongElement) {
  auto sum = TrueSum(100000, 2, 7);
  sum[70001] += 1;
  sum[90000] = 0;
  Status st = CheckSum(sum.data(), sum.size(), 2, 7);
  EXPECT_EQ(st.code(), Code::kDataLoss);
  EXPECT_NE(st.message().find("element 70001 of 100000"), std::string::npos) << st.message();
}

TEST(ResultCheckTest, CatchesAWrongElementAtTheEnds) {
  for (size_t bad : {size_t{0}, size_t{4095}, size_t{4096}, size_t{9999}}) {
    auto sum = TrueSum(10000, 3, 0);
    sum[bad] = -sum[bad];
    Status st = CheckSum(sum.data(), sum.size(), 3, 0);
    EXPECT_NE(st.message().find("element " + std::to_string(bad) + " "), std::string::npos) << st.message();
  }
}

TEST(ResultCheckTest, CatchesNan) {
  auto sum = TrueSum(16, 2, 0);
  sum[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(CheckSum(sum.data(), sum.size(), 2, 0).code(), Code::kDataLoss);
}

TEST(ResultCheckTest, CatchesAMissingRankAStaleBufferAndAShiftedChunk) {
  const size_t n = 4096;
  // Only ranks 0..2 of 4 arrived.
  auto partial = TrueSum(n, 3, 1);
  EXPECT_FALSE(CheckSum(partial.data(), n, 4, 1).ok());
  // The previous iteration's result was left in the buffer.
  auto stale = TrueSum(n, 4, 0);
  EXPECT_FALSE(CheckSum(stale.data(), n, 4, 1).ok());
  // The untouched input: the all-reduce did nothing.
  std::vector<float> input(n);
  FillContribution(input.data(), n, 0, 1);
  EXPECT_FALSE(CheckSum(input.data(), n, 2, 1).ok());
  // The second half holds the first half's values (a chunk at the wrong offset).
  auto shifted = TrueSum(n, 2, 1);
  std::copy(shifted.begin(), shifted.begin() + n / 2, shifted.begin() + n / 2);
  Status st = CheckSum(shifted.data(), n, 2, 1);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("element " + std::to_string(n / 2)), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ringtrain::bench
