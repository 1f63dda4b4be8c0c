// What a task's heartbeats carry: the newest step's figures, rates over the recent
// steps, and each step's compute time exactly once (bounded).
#include "cluster/progress_reporter.h"

#include <gtest/gtest.h>

#include "proto/coordination.pb.h"

namespace ringtrain::cluster {
namespace {

train::StepReport Report(int64_t global_step, double compute_s) {
  train::StepReport r;
  r.global_step = global_step;
  r.epoch = 1;
  r.epochs = 3;
  r.step = static_cast<int>(global_step);
  r.steps = 100;
  r.examples = 32;
  r.rank = 1;
  r.seconds = 0.1;
  r.compute_seconds = compute_s;
  r.input_wait_seconds = 0.01;
  r.comm_wait_seconds = 0.1 - 0.01 - compute_s;
  r.loss = 0.5;
  r.accuracy = 0.75;
  return r;
}

TEST(ProgressReporterTest, NothingBeforeTheFirstStep) {
  ProgressReporter p;
  coordination::TaskProgress out;
  EXPECT_FALSE(p.Fill(&out));
}

// A task's own events (a backup fallback) go out once, with the next progress.
TEST(ProgressReporterTest, EventsGoOutOnceWithTheNextProgress) {
  ProgressReporter p;
  p.AddEvent("backup_fallback", "Backup b/ckpt-9.json is corrupted (bad checksum); using the previous backup instead.");
  coordination::TaskProgress out;
  EXPECT_FALSE(p.Fill(&out));  // nothing before the first step: the event waits
  p.OnStep(Report(1, 0.05));
  ASSERT_TRUE(p.Fill(&out));
  ASSERT_EQ(out.events_size(), 1);
  EXPECT_EQ(out.events(0).kind(), "backup_fallback");
  EXPECT_NE(out.events(0).message().find("ckpt-9"), std::string::npos);
  EXPECT_GT(out.events(0).unix_time(), 1.6e9);
  coordination::TaskProgress next;
  p.OnStep(Report(2, 0.05));
  ASSERT_TRUE(p.Fill(&next));
  EXPECT_EQ(next.events_size(), 0);
  for (int i = 0; i < 40; ++i) p.AddEvent("backup_fallback", std::to_string(i));
  coordination::TaskProgress bounded;
  ASSERT_TRUE(p.Fill(&bounded));
  ASSERT_EQ(bounded.events_size(), static_cast<int>(ProgressReporter::kMaxEvents));
  EXPECT_EQ(bounded.events(bounded.events_size() - 1).message(), "39");  // the newest kept
}

TEST(ProgressReporterTest, NewestStepAndEachStepTimeOnce) {
  ProgressReporter p;
  p.OnStep(Report(1, 0.05));
  p.OnStep(Report(2, 0.06));
  p.OnBackup(2, 0.3);
  coordination::TaskProgress out;
  ASSERT_TRUE(p.Fill(&out));
  EXPECT_EQ(out.global_step(), 2);
  EXPECT_EQ(out.epoch(), 1);
  EXPECT_EQ(out.epochs(), 3);
  EXPECT_EQ(out.steps_per_epoch(), 100);
  EXPECT_EQ(out.rank(), 1);
  EXPECT_DOUBLE_EQ(out.compute_s(), 0.06);
  EXPECT_DOUBLE_EQ(out.input_wait_s(), 0.01);
  EXPECT_DOUBLE_EQ(out.loss(), 0.5);
  EXPECT_DOUBLE_EQ(out.accuracy(), 0.75);
  EXPECT_DOUBLE_EQ(out.images_per_sec(), 320);  // 32 examples per 0.1 s
  EXPECT_DOUBLE_EQ(out.steps_per_sec(), 10);
  EXPECT_EQ(out.last_backup_step(), 2);
  EXPECT_GT(out.last_backup_unix_time(), 0);
  EXPECT_EQ(out.state(), "running");
  ASSERT_EQ(out.recent_steps_size(), 2);
  EXPECT_EQ(out.recent_steps(0).step(), 1);
  EXPECT_DOUBLE_EQ(out.recent_steps(1).compute_s(), 0.06);
  // The next heartbeat repeats the figures but not the step times already sent.
  coordination::TaskProgress again;
  ASSERT_TRUE(p.Fill(&again));
  EXPECT_EQ(again.global_step(), 2);
  EXPECT_EQ(again.recent_steps_size(), 0);
  p.SetState("preempted");
  ASSERT_TRUE(p.Fill(&again));
  EXPECT_EQ(again.state(), "preempted");
}

TEST(ProgressReporterTest, RecentStepsAreBoundedToTheNewest) {
  ProgressReporter p;
  for (int64_t s = 1; s <= 2000; ++s) p.OnStep(Report(s, 0.05));
  coordination::TaskProgress out;
  ASSERT_TRUE(p.Fill(&out));
  ASSERT_EQ(out.recent_steps_size(), static_cast<int>(ProgressReporter::kMaxRecentSteps));
  EXPECT_EQ(out.recent_steps(0).step(), 2000 - static_cast<int64_t>(ProgressReporter::kMaxRecentSteps) + 1);
  EXPECT_EQ(out.recent_steps(out.recent_steps_size() - 1).step(), 2000);
}

}  // namespace
}  // namespace ringtrain::cluster
