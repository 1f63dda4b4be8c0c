// The memory check: one line naming the largest part, its cause, the bound and the
// remedy; exit 2 (about the configuration); sizes saturate instead of wrapping.
#include "common/memory_bound.h"

#include <gtest/gtest.h>

#include "common/exit_policy.h"

namespace ringtrain {
namespace {

const uint64_t kGiB = uint64_t{1} << 30;

TEST(MemoryBoundTest, WithinTheBoundIsOk) {
  MemoryBound bound{4 * kGiB, false};
  EXPECT_TRUE(CheckMemory({{"activations", kGiB, "batch_size_per_worker 64", "lower it"}}, bound).ok());
  EXPECT_TRUE(CheckMemory({{"activations", kSaturated, "x", "y"}}, MemoryBound{}).ok());  // no bound
}

TEST(MemoryBoundTest, OverTheBoundNamesTheLargestPartAndTheRemedy) {
  MemoryBound bound{uint64_t{23} * kGiB + kGiB / 2, false};
  Status s = CheckMemory({{"weights, gradients and optimizer state", kGiB, "the model's 10 parameters", "smaller"},
                          {"activations", uint64_t{3} << 40, "batch_size_per_worker 1000000000",
                           "lower batch_size_per_worker"}},
                         bound);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.subject(), Subject::kConfig);
  EXPECT_EQ(ExitCodeFor(s), kExitBadConfig);
  EXPECT_EQ(s.message(),
            "batch_size_per_worker 1000000000 would need about 3.0 TiB for activations (about 3.0 TiB in all); the "
            "bound is 23.5 GiB (RINGTRAIN_MAX_MEMORY_MB, default: this machine's physical memory); lower "
            "batch_size_per_worker");
  bound.from_environment = true;
  s = CheckMemory({{"activations", 100 * kGiB, "c", "r"}}, bound);
  EXPECT_NE(s.message().find("the bound is 23.5 GiB (RINGTRAIN_MAX_MEMORY_MB);"), std::string::npos) << s.message();
}

TEST(MemoryBoundTest, WorkersOnOneMachineMultiply) {
  MemoryBound bound{3 * kGiB, true};
  EXPECT_TRUE(CheckMemory({{"activations", kGiB, "c", "r"}}, bound, 3).ok());
  Status s = CheckMemory({{"activations", kGiB, "c", "r"}}, bound, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("in each of 4 workers on this machine (about 4.0 GiB in all)"), std::string::npos)
      << s.message();
}

TEST(MemoryBoundTest, SaturatingArithmetic) {
  EXPECT_EQ(SatMul(uint64_t{1} << 40, uint64_t{1} << 40), kSaturated);
  EXPECT_EQ(SatAdd(kSaturated, 1), kSaturated);
  EXPECT_EQ(SatMul(0, kSaturated), 0u);
  Status s = CheckMemory({{"activations", kSaturated, "c", "r"}, {"data", kSaturated, "d", "r"}}, MemoryBound{kGiB});
  EXPECT_NE(s.message().find("more than 16 EiB"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ringtrain
