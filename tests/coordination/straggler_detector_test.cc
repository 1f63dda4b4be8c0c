// The straggler detector as a pure function of step reports: who is named, when, with
// which figures, and that healthy or briefly slow ranks are not.
#include "coordination/straggler_detector.h"

#include <gtest/gtest.h>

namespace ringtrain::coordination {
namespace {

const std::vector<std::string> kStragglerTasks = {"chief:0", "worker:1", "worker:2"};

// Feeds one step: every task's compute time, in the given order.
std::vector<StragglerChange> Step(StragglerDetector* d, int64_t step, const std::vector<double>& times) {
  std::vector<StragglerChange> out;
  for (size_t i = 0; i < kStragglerTasks.size(); ++i) {
    for (auto& c : d->Add(kStragglerTasks[i], step, times[i])) out.push_back(c);
  }
  return out;
}

// The metrics' straggler score: compute over the median in the last judged step.
TEST(StragglerDetectorTest, ScoreIsTheLastJudgedStepsRatioToTheMedian) {
  StragglerDetector d(kStragglerTasks, {0.2, 10});
  EXPECT_EQ(d.Score("worker:1"), 1.0);  // nothing judged yet
  Step(&d, 1, {0.030, 0.090, 0.030});
  EXPECT_NEAR(d.Score("worker:1"), 3.0, 1e-12);
  EXPECT_NEAR(d.Score("chief:0"), 1.0, 1e-12);
  Step(&d, 2, {0.030, 0.045, 0.030});
  EXPECT_NEAR(d.Score("worker:1"), 1.5, 1e-12);
  EXPECT_EQ(d.Score("worker:9"), 1.0);  // unknown task
}

TEST(StragglerDetectorTest, HealthyRanksWithJitterAreNeverNamed) {
  StragglerDetector d(kStragglerTasks, {0.2, 10});
  for (int64_t s = 1; s <= 200; ++s) {
    const double j = 0.001 * static_cast<double>(s % 5);  // up to 4 ms on 30 ms: under 20%
    EXPECT_TRUE(Step(&d, s, {0.030 + j, 0.031, 0.030 + 0.004 - j}).empty()) << s;
  }
  EXPECT_TRUE(d.Stragglers().empty());
}

TEST(StragglerDetectorTest, SlowRankIsNamedOnceAfterTheConsecutiveStepsThenRecovers) {
  StragglerDetector d(kStragglerTasks, {0.2, 10});
  for (int64_t s = 1; s <= 9; ++s) EXPECT_TRUE(Step(&d, s, {0.030, 0.090, 0.030}).empty()) << s;
  EXPECT_FALSE(d.IsStraggler("worker:1"));
  auto named = Step(&d, 10, {0.030, 0.090, 0.030});
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].kind, StragglerChange::Kind::kNamed);
  EXPECT_EQ(named[0].info.task, "worker:1");
  EXPECT_EQ(named[0].info.steps, 10);
  EXPECT_EQ(named[0].Line(), "straggler: worker:1 computes 0.090 s per step, 3.0x the median 0.030 s, for 10 steps");
  // Still slow: named, counted, but not said again.
  for (int64_t s = 11; s <= 12; ++s) EXPECT_TRUE(Step(&d, s, {0.030, 0.090, 0.030}).empty());
  auto list = d.Stragglers();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].steps, 12);
  EXPECT_NEAR(list[0].compute_s, 0.090, 1e-12);
  EXPECT_NEAR(list[0].median_compute_s, 0.030, 1e-12);
  auto recovered = Step(&d, 13, {0.030, 0.031, 0.030});
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].kind, StragglerChange::Kind::kRecovered);
  EXPECT_EQ(recovered[0].Line(), "straggler: worker:1 recovered after 12 slow steps: 0.031 s per step, the median 0.030 s");
  EXPECT_TRUE(d.Stragglers().empty());
}

TEST(StragglerDetectorTest, AnInterruptedRunStartsCountingAgain) {
  StragglerDetector d(kStragglerTasks, {0.2, 10});
  int64_t s = 0;
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(Step(&d, ++s, {0.030, 0.030, 0.080}).empty());
  EXPECT_TRUE(Step(&d, ++s, {0.030, 0.030, 0.030}).empty());
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(Step(&d, ++s, {0.030, 0.030, 0.080}).empty());
  EXPECT_EQ(Step(&d, ++s, {0.030, 0.030, 0.080}).size(), 1u);
}

TEST(StragglerDetectorTest, TheShareIsTheThreshold) {
  StragglerDetector d(kStragglerTasks, {0.2, 3});
  for (int64_t s = 1; s <= 20; ++s) EXPECT_TRUE(Step(&d, s, {0.100, 0.119, 0.100}).empty());  // 19% slower
  std::vector<StragglerChange> c;
  for (int64_t s = 21; s <= 23; ++s) c = Step(&d, s, {0.100, 0.121, 0.100});  // 21% slower
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].info.task, "worker:1");
}

TEST(StragglerDetectorTest, SubMillisecondDifferencesAreNoise) {
  StragglerDetector d(kStragglerTasks, {0.2, 2});
  for (int64_t s = 1; s <= 10; ++s) EXPECT_TRUE(Step(&d, s, {0.00010, 0.00019, 0.00010}).empty());
}

TEST(StragglerDetectorTest, StepsAreJudgedWhenCompleteWhateverTheOrderOfReports) {
  StragglerDetector d({"chief:0", "worker:1"}, {0.2, 3});
  // worker:1 reports three steps at once (one heartbeat), the chief one by one later.
  EXPECT_TRUE(d.Add("worker:1", 1, 0.5).empty());
  EXPECT_TRUE(d.Add("worker:1", 2, 0.5).empty());
  EXPECT_TRUE(d.Add("worker:1", 3, 0.5).empty());
  EXPECT_TRUE(d.Add("chief:0", 1, 0.1).empty());
  EXPECT_TRUE(d.Add("chief:0", 2, 0.1).empty());
  auto c = d.Add("chief:0", 3, 0.1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].info.task, "worker:1");
  EXPECT_NEAR(c[0].info.median_compute_s, 0.3, 1e-12);  // two ranks: the mean of both
}

TEST(StragglerDetectorTest, AStepSomeRankSkippedIsDroppedNotCountedAsHealthy) {
  StragglerDetector d({"chief:0", "worker:1"}, {0.2, 3});
  d.Add("chief:0", 1, 0.1);
  d.Add("worker:1", 1, 0.5);
  d.Add("chief:0", 2, 0.1);  // worker:1's step 2 was never sent
  d.Add("chief:0", 3, 0.1);
  d.Add("worker:1", 3, 0.5);  // completes step 3; step 2 can no longer complete
  d.Add("chief:0", 4, 0.1);
  auto c = d.Add("worker:1", 4, 0.5);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].info.steps, 3);
  EXPECT_TRUE(d.Add("worker:1", 2, 0.5).empty());  // late report of a dropped step: pending only
}

TEST(StragglerDetectorTest, OneTaskOrAnUnknownTaskIsNeverJudged) {
  StragglerDetector alone({"worker:0"}, {0.2, 1});
  EXPECT_TRUE(alone.Add("worker:0", 1, 5.0).empty());
  StragglerDetector d({"chief:0", "worker:1"}, {0.2, 1});
  EXPECT_TRUE(d.Add("worker:9", 1, 5.0).empty());
  EXPECT_TRUE(d.Add("chief:0", 1, 0.1).empty());
  EXPECT_EQ(d.Add("worker:1", 1, 0.5).size(), 1u);
}

TEST(StragglerDetectorTest, PendingStepsAreBounded) {
  StragglerDetector d({"chief:0", "worker:1"}, {0.2, 1});
  // worker:1 never reports: the pending steps do not grow without bound, and a later
  // complete step is still judged.
  for (int64_t s = 1; s <= 10000; ++s) d.Add("chief:0", s, 0.1);
  d.Add("chief:0", 10001, 0.1);
  EXPECT_EQ(d.Add("worker:1", 10001, 0.5).size(), 1u);
}

}  // namespace
}  // namespace ringtrain::coordination
