#include "jobqueue/job_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::jobqueue {
namespace {

using testing::FaultInjectionEnv;
using testing::TempDir;

std::unique_ptr<JobQueue> OpenOrDie(env::Env* env, const std::string& path) {
  auto q = JobQueue::Open(env, path);
  EXPECT_TRUE(q.ok()) << q.status().ToString();
  return q.ok() ? std::move(q).value() : nullptr;
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(JobQueueTest, RunsJobsFirstInFirstOutAndRemembersEverythingAfterAReopen) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  {
    auto q = OpenOrDie(env::Default(), path);
    ASSERT_TRUE(q);
    EXPECT_EQ(*q->Submit("first", "{\"epochs\": 1}", 10), 1);
    EXPECT_EQ(*q->Submit("second", "{\"epochs\": 2}", 11), 2);
    EXPECT_EQ(*q->Submit("third", "{\"epochs\": 3}\xff", 12), 3);  // not UTF-8: kept, not a throw
    auto a = q->StartNext(20);
    ASSERT_TRUE(a.ok() && a->has_value());
    EXPECT_EQ((*a)->id, 1);
    EXPECT_EQ((*a)->state, JobState::kRunning);
    EXPECT_EQ((*a)->attempts, 1);
    ASSERT_TRUE(q->Finish(1, {{"loss", 0.25}}, 30).ok());
    auto b = q->StartNext(31);
    ASSERT_TRUE(b.ok() && b->has_value());
    EXPECT_EQ((*b)->id, 2);
    ASSERT_TRUE(q->Fail(2, "data.train: cannot read 'x.idx'", 32).ok());
  }
  auto q = OpenOrDie(env::Default(), path);
  ASSERT_TRUE(q);
  const std::vector<JobRecord> jobs = q->List();
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].state, JobState::kFinished);
  EXPECT_EQ(jobs[0].final_metrics["loss"], 0.25);
  EXPECT_EQ(jobs[0].submitted_s, 10);
  EXPECT_EQ(jobs[0].started_s, 20);
  EXPECT_EQ(jobs[0].ended_s, 30);
  EXPECT_EQ(jobs[1].state, JobState::kFailed);
  EXPECT_EQ(jobs[1].error, "data.train: cannot read 'x.idx'");
  EXPECT_EQ(jobs[2].state, JobState::kQueued);
  EXPECT_EQ(jobs[2].name, "third");
  EXPECT_EQ(*q->Submit("fourth", "{}", 40), 4) << "ids are never reused";
  auto c = q->StartNext(41);
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->id, 3);
}

TEST(JobQueueTest, AJobLeftRunningByAKilledDaemonIsHandedOutAgainFirst) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  {
    auto q = OpenOrDie(env::Default(), path);
    ASSERT_TRUE(q->Submit("a", "{}", 1).ok());
    ASSERT_TRUE(q->Submit("b", "{}", 2).ok());
    ASSERT_TRUE(q->StartNext(3).ok());
  }  // the daemon is killed while job 1 runs
  auto q = OpenOrDie(env::Default(), path);
  auto again = q->StartNext(4);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->id, 1);
  EXPECT_EQ((*again)->attempts, 2);
  EXPECT_EQ((*again)->started_s, 3) << "the first start's time is kept";
  ASSERT_TRUE(q->Finish(1, nullptr, 5).ok());
  EXPECT_FALSE(q->Finish(1, nullptr, 6).ok()) << "a job is not finished twice";
  auto next = q->StartNext(7);
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->id, 2);
  ASSERT_TRUE(q->Finish(2, nullptr, 8).ok());
  auto none = q->StartNext(9);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(JobQueueTest, CancelStopsAQueuedJobAtOnceAndAsksARunningOneToStop) {
  TempDir tmp;
  auto q = OpenOrDie(env::Default(), tmp.path() + "/queue.json");
  ASSERT_TRUE(q->Submit("running", "{}", 1).ok());
  ASSERT_TRUE(q->Submit("queued", "{}", 2).ok());
  ASSERT_TRUE(q->StartNext(3).ok());
  EXPECT_EQ(*q->Cancel(2, 4), JobState::kCancelled);
  EXPECT_EQ(q->Get(2)->ended_s, 4);
  EXPECT_EQ(*q->Cancel(1, 5), JobState::kRunning);
  EXPECT_TRUE(q->Get(1)->cancel_requested);
  ASSERT_TRUE(q->MarkCancelled(1, 6).ok());
  EXPECT_EQ(q->Get(1)->state, JobState::kCancelled);
  auto again = q->Cancel(1, 7);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), "job-1 is already cancelled: nothing to cancel");
  EXPECT_EQ(q->Cancel(9, 7).status().code(), Code::kNotFound);
  EXPECT_EQ(q->MarkCancelled(2, 8).code(), Code::kFailedPrecondition);
  auto none = q->StartNext(9);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value()) << "cancelled jobs are not run";
}

TEST(JobQueueTest, AFailedWriteChangesNothingAndNamesTheFile) {
  TempDir tmp;
  FaultInjectionEnv fenv;
  const std::string path = tmp.path() + "/queue.json";
  auto q = OpenOrDie(&fenv, path);
  ASSERT_TRUE(q->Submit("kept", "{}", 1).ok());
  fenv.FailAppendsMatching("*");
  auto lost = q->Submit("not acknowledged", "{}", 2);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().subject(), Subject::kStorage);
  EXPECT_NE(lost.status().message().find("queue.json"), std::string::npos) << lost.status().message();
  auto start = q->StartNext(3);
  EXPECT_FALSE(start.ok());
  EXPECT_EQ(q->Get(1)->state, JobState::kQueued) << "memory never runs ahead of the disk";
  fenv.Heal();
  EXPECT_EQ(q->List().size(), 1u);
  EXPECT_EQ(*q->Submit("next", "{}", 4), 2) << "the failed submission took no id";
  auto reopened = OpenOrDie(env::Default(), path);
  ASSERT_EQ(reopened->List().size(), 2u);
  EXPECT_EQ(reopened->List()[1].name, "next");
}

TEST(JobQueueTest, ACrashMidWriteLeavesTheLastAcknowledgedQueue) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  {
    FaultInjectionEnv fenv;
    auto q = OpenOrDie(&fenv, path);
    ASSERT_TRUE(q->Submit("a", "{}", 1).ok());
    fenv.CrashAfterFiles(0, /*drop_unsynced_data=*/true);  // dies inside the next write
    EXPECT_FALSE(q->Submit("b", "{}", 2).ok());
  }
  auto q = OpenOrDie(env::Default(), path);
  ASSERT_EQ(q->List().size(), 1u);
  EXPECT_EQ(q->List()[0].name, "a");
}

TEST(JobQueueTest, ADamagedFileIsRefusedWithOneLineAndLeftAsItIs) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"format\": \"ringtrain-job-queue\", \"version\": 1, \"next_id\": 2, \"jobs\": [{\"id\": 1", "not JSON"},
      {"[1, 2]", "not JSON"},
      {"{\"jobs\": []}", "not a ringtrain job queue"},
      {"{\"format\": 5, \"jobs\": []}", "not a ringtrain job queue"},  // not a string: no throw
      {"{\"format\": \"ringtrain-job-queue\", \"version\": 9, \"next_id\": 1, \"jobs\": []}", "has version 9"},
      {"{\"format\": \"ringtrain-job-queue\", \"version\": 1, \"next_id\": 1, \"jobs\": {}}", "'jobs' is missing"},
      {"{\"format\": \"ringtrain-job-queue\", \"version\": 1, \"next_id\": 5, \"jobs\": [{\"id\": 1}]}",
       "job #1: 'name' is missing"},
      {"{\"format\": \"ringtrain-job-queue\", \"version\": 1, \"next_id\": 5, \"jobs\": [{\"id\": 1, \"name\": \"a\", "
       "\"job\": \"{}\", \"state\": \"paused\"}]}",
       "unknown state 'paused'"},
  };
  for (const auto& [text, want] : cases) {
    WriteText(path, text);
    auto q = JobQueue::Open(env::Default(), path);
    ASSERT_FALSE(q.ok()) << text;
    EXPECT_EQ(q.status().subject(), Subject::kStorage);
    EXPECT_NE(q.status().message().find(want), std::string::npos) << q.status().message();
    EXPECT_NE(q.status().message().find(path), std::string::npos) << q.status().message();
    EXPECT_NE(q.status().message().find("move it aside"), std::string::npos) << q.status().message();
    std::ifstream in(path);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text) << "left as it is";
  }
}

TEST(JobQueueTest, IdsOutOfOrderAreRefused) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  {
    auto q = OpenOrDie(env::Default(), path);
    ASSERT_TRUE(q->Submit("a", "{}", 1).ok());
    ASSERT_TRUE(q->Submit("b", "{}", 2).ok());
  }
  std::ifstream in(path);
  auto v = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  std::swap(v["jobs"][0], v["jobs"][1]);
  WriteText(path, v.dump());
  auto q = JobQueue::Open(env::Default(), path);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("job ids out of order at job #2"), std::string::npos) << q.status().message();
}

TEST(JobQueueTest, ConcurrentSubmissionsAllGetDistinctIdsAndAreAllKept) {
  TempDir tmp;
  const std::string path = tmp.path() + "/queue.json";
  auto q = OpenOrDie(env::Default(), path);
  std::vector<std::thread> threads;
  std::vector<int64_t> ids(16, 0);
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] { auto id = q->Submit("job" + std::to_string(t), "{}", t);
      ids[t] = id.ok() ? *id : -1; });
  }
  for (auto& th : threads) th.join();
  std::sort(ids.begin(), ids.end());
  for (int t = 0; t < 16; ++t) EXPECT_EQ(ids[t], t + 1);
  EXPECT_EQ(OpenOrDie(env::Default(), path)->List().size(), 16u);
}

TEST(JobQueueTest, AnUnwritablePlaceFailsAtOpen) {
  auto q = JobQueue::Open(env::Default(), "/proc/ringtrain-no-such-dir/queue.json");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().subject(), Subject::kStorage);
  EXPECT_NE(q.status().message().find("creating the job queue"), std::string::npos) << q.status().message();
}

}  // namespace
}  // namespace ringtrain::jobqueue
