// The chief daemon's decisions (daemon/job_board.h), on a real queue file, with the
// clock given: which job every daemon runs, when a job ends and how.
#include "daemon/job_board.h"

#include <gtest/gtest.h>

#include "env/env.h"
#include "testing/temp_dir.h"

namespace ringtrain::daemon {
namespace {

using jobqueue::JobQueue;
using jobqueue::JobState;
using std::chrono::milliseconds;

constexpr double kNow = 1.7e9;

class JobBoardTest : public ::testing::Test {
 protected:
  std::unique_ptr<JobBoard> Open() {
    auto q = JobQueue::Open(env::Default(), tmp_.path() + "/queue.json");
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    BoardOptions o;
    o.tasks = {"worker:0", "worker:1"};
    o.chief_task = "worker:0";
    o.daemon_timeout = milliseconds(1000);
    auto b = JobBoard::Make(std::move(q).value(), o, kNow);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return std::move(b).value();
  }
  Assignment Poll(JobBoard* b, const std::string& task, int64_t running, std::vector<ChildOutcome> outcomes = {},
                  milliseconds at = milliseconds(0)) {
    auto a = b->Poll(task, running, outcomes, t0_ + at, kNow + at.count() / 1000.0);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : Assignment{};
  }
  testing::TempDir tmp_;
  SteadyTime t0_ = std::chrono::steady_clock::now();
};

TEST_F(JobBoardTest, AJobStartsOnlyWhenEveryDaemonIsHereAndIdle) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", R"({"epochs": 1})", kNow).ok());
  EXPECT_EQ(Poll(b.get(), "worker:0", 0).job_id, 0);  // worker:1 not seen yet
  Assignment a = Poll(b.get(), "worker:1", 0);
  EXPECT_EQ(a.job_id, 1);
  EXPECT_EQ(a.job_text, R"({"epochs": 1})");
  EXPECT_EQ(a.attempt, 1);
  EXPECT_FALSE(a.stop);
  EXPECT_EQ(b->Get(1)->state, JobState::kRunning);
}

TEST_F(JobBoardTest, AJobEndsWhenEveryChildHasEndedThenTheNextStarts) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
  ASSERT_TRUE(b->Submit("b", "{}", kNow).ok());
  Poll(b.get(), "worker:0", 0);
  ASSERT_EQ(Poll(b.get(), "worker:1", 0).job_id, 1);
  // The chief's child ends first: the job is not over while worker:1's runs.
  EXPECT_EQ(Poll(b.get(), "worker:0", 0, {{1, 0, "", R"({"epoch": 2, "loss": 0.5})"}}).job_id, 1);
  EXPECT_EQ(b->Get(1)->state, JobState::kRunning);
  Assignment next = Poll(b.get(), "worker:1", 0, {{1, 0, "", ""}});
  EXPECT_EQ(b->Get(1)->state, JobState::kFinished);
  EXPECT_EQ(b->Get(1)->final_metrics["loss"], 0.5);
  EXPECT_EQ(next.job_id, 2);
}

TEST_F(JobBoardTest, AFailedChildStopsTheOthersAndFailsTheJobWithItsError) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
  Poll(b.get(), "worker:0", 0);
  Poll(b.get(), "worker:1", 0);
  Assignment after = Poll(b.get(), "worker:1", 0, {{1, 3, "cannot read /data/x.idx", ""}});
  EXPECT_TRUE(after.stop);
  EXPECT_TRUE(Poll(b.get(), "worker:0", 1).stop);
  // The chief's child stops (exit 7): the job fails with worker:1's cause.
  Poll(b.get(), "worker:0", 0, {{1, 7, "", ""}});
  auto job = b->Get(1);
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_EQ(job->error, "worker:1 exited with code 3 (bad data): cannot read /data/x.idx") << job->error;
}

TEST_F(JobBoardTest, CancelStopsARunningJobAndEndsItCancelled) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
  ASSERT_TRUE(b->Submit("b", "{}", kNow).ok());
  Poll(b.get(), "worker:0", 0);
  Poll(b.get(), "worker:1", 0);
  EXPECT_EQ(*b->Cancel(2, kNow), JobState::kCancelled);   // queued: at once
  EXPECT_EQ(*b->Cancel(1, kNow), JobState::kRunning);     // running: stopped first
  EXPECT_TRUE(Poll(b.get(), "worker:0", 1).stop);
  Poll(b.get(), "worker:0", 0, {{1, 7, "", ""}});
  Poll(b.get(), "worker:1", 0, {{1, 7, "", ""}});
  EXPECT_EQ(b->Get(1)->state, JobState::kCancelled);
  EXPECT_EQ(b->Get(2)->attempts, 0);
  EXPECT_FALSE(b->Cancel(1, kNow).ok());
}

TEST_F(JobBoardTest, AGoneDaemonHoldsTheJobUntilItIsStoppedOrTheChiefEnded) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
  Poll(b.get(), "worker:0", 0);
  Poll(b.get(), "worker:1", 0);
  // worker:1 stops polling (killed); the chief's child goes on: the job runs on, waiting.
  EXPECT_EQ(Poll(b.get(), "worker:0", 1, {}, milliseconds(5000)).job_id, 1);
  EXPECT_EQ(b->Get(1)->state, JobState::kRunning);
  // worker:1 is back (restarted) and starts its child again: still job 1.
  EXPECT_EQ(Poll(b.get(), "worker:1", 0, {}, milliseconds(5100)).job_id, 1);
  // Once the chief's child has ended, a daemon gone for good no longer holds the job.
  Poll(b.get(), "worker:0", 0, {{1, 0, "", ""}}, milliseconds(5200));
  EXPECT_EQ(b->Get(1)->state, JobState::kRunning);
  Poll(b.get(), "worker:0", 0, {{1, 0, "", ""}}, milliseconds(7000));
  EXPECT_EQ(b->Get(1)->state, JobState::kFinished);
}

TEST_F(JobBoardTest, ARestartedChiefDaemonResumesTheRunningJobAndHearsTheOutcomesAgain) {
  {
    auto b = Open();
    ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
    ASSERT_TRUE(b->Submit("b", "{}", kNow).ok());
    Poll(b.get(), "worker:0", 0);
    Poll(b.get(), "worker:1", 0);
  }  // killed: job 1 is running in the file
  auto b = Open();
  EXPECT_EQ(b->current_job(), 1);
  EXPECT_EQ(b->Get(1)->attempts, 2);
  // worker:1's child is still running it and is kept; the chief's daemon starts its own.
  Assignment a = Poll(b.get(), "worker:1", 1);
  EXPECT_EQ(a.job_id, 1);
  EXPECT_EQ(a.attempt, 2);
  Poll(b.get(), "worker:0", 0, {{1, 0, "", ""}});
  Poll(b.get(), "worker:1", 0, {{1, 0, "", ""}});
  EXPECT_EQ(b->Get(1)->state, JobState::kFinished);
  EXPECT_EQ(b->Get(2)->state, JobState::kRunning);
  EXPECT_EQ(b->Get(2)->attempts, 1);
}

TEST_F(JobBoardTest, AnOutcomeForAnotherJobOrATaskOutsideTheClusterIsNotTaken) {
  auto b = Open();
  ASSERT_TRUE(b->Submit("a", "{}", kNow).ok());
  Poll(b.get(), "worker:0", 0);
  Poll(b.get(), "worker:1", 0);
  Poll(b.get(), "worker:1", 0, {{7, 3, "old", ""}});
  EXPECT_FALSE(Poll(b.get(), "worker:0", 1).stop);
  auto stranger = b->Poll("worker:5", 0, {}, t0_, kNow);
  EXPECT_EQ(stranger.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringtrain::daemon
