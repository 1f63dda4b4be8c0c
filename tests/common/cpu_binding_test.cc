#include "common/cpu_binding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace ringtrain {
namespace {

TEST(CpuBindingTest, ParsesCoreAndNoneOnly) {
  EXPECT_EQ(*ParseCpuBinding("core"), CpuBinding::kCore);
  EXPECT_EQ(*ParseCpuBinding("none"), CpuBinding::kNone);
  auto bad = ParseCpuBinding("socket");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'socket'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("core"), std::string::npos);
}

TEST(CpuBindingTest, SharesAreContiguousDisjointAndCoverEveryCpu) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10};  // 7 not allowed
  for (int workers = 1; workers <= 10; ++workers) {
    std::vector<int> seen;
    size_t smallest = cpus.size(), largest = 0;
    for (int i = 0; i < workers; ++i) {
      const std::vector<int> share = CpuShare(cpus, workers, i);
      ASSERT_FALSE(share.empty()) << workers << " workers, worker " << i;
      smallest = std::min(smallest, share.size());
      largest = std::max(largest, share.size());
      seen.insert(seen.end(), share.begin(), share.end());
    }
    EXPECT_EQ(seen, cpus) << workers << " workers: in order, each CPU once";
    EXPECT_LE(largest - smallest, 1u) << workers << " workers";
  }
}

TEST(CpuBindingTest, MoreWorkersThanCpusBindsNobody) {
  const std::vector<int> cpus = {0, 1};
  EXPECT_EQ(CpuShare(cpus, 2, 1), (std::vector<int>{1}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(CpuShare(cpus, 3, i).empty()) << i;
  EXPECT_TRUE(CpuShare(cpus, 2, 2).empty());
  EXPECT_TRUE(CpuShare(cpus, 2, -1).empty());
  EXPECT_TRUE(CpuShare({}, 1, 0).empty());
}

TEST(CpuBindingTest, DescribesRanges) {
  EXPECT_EQ(DescribeCpus({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(DescribeCpus({5}), "5");
  EXPECT_EQ(DescribeCpus({1, 3, 4}), "1,3-4");
  EXPECT_EQ(DescribeCpus({}), "");
}

TEST(CpuBindingTest, AllowedCpusAreThisProcessesAffinity) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(std::set<int>(cpus.begin(), cpus.end()).size(), cpus.size());
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
}

}  // namespace
}  // namespace ringtrain
