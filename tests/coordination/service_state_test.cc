#include "coordination/service_state.h"

#include <gtest/gtest.h>

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;
using Clock = ServiceState::Clock;

const std::vector<std::string> kTasks = {"chief:0", "worker:0", "worker:1"};
const char* kJob = R"({"optimizer": {"learning_rate": 0.001}})";

ServiceState MakeState() { return ServiceState(kTasks, kJob, milliseconds(200)); }

TEST(ServiceStateTest, RegistrationTracksMissingTasks) {
  ServiceState s = MakeState();
  EXPECT_EQ(s.MissingRegistrations(), kTasks);
  ASSERT_TRUE(s.Register("worker:0", 1, kJob).ok());
  ASSERT_TRUE(s.Register("worker:0", 1, kJob).ok());  // idempotent
  EXPECT_EQ(s.MissingRegistrations(), (std::vector<std::string>{"chief:0", "worker:1"}));
  ASSERT_TRUE(s.Register("chief:0", 2, kJob).ok());
  ASSERT_TRUE(s.Register("worker:1", 3, kJob).ok());
  EXPECT_TRUE(s.MissingRegistrations().empty());
}

TEST(ServiceStateTest, RefusesUnknownTasksAndDifferentJobs) {
  ServiceState s = MakeState();
  Status unknown = s.Register("worker:7", 1, kJob);
  ASSERT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.message().find("task 'worker:7' is not in this cluster's TF_CONFIG"), std::string::npos);

  Status differs = s.Register("worker:1", 1, R"({"optimizer": {"learning_rate": 0.01}})");
  ASSERT_EQ(differs.code(), Code::kPermissionDenied);
  EXPECT_NE(differs.message().find("/optimizer/learning_rate"), std::string::npos);
  EXPECT_EQ(s.MissingRegistrations().size(), 3u);  // neither was recorded
}

TEST(ServiceStateTest, EmptyReferenceJobDisablesTheCheck) {
  ServiceState s(kTasks, "", milliseconds(200));
  EXPECT_TRUE(s.Register("worker:1", 1, R"({"anything": true})").ok());
}

TEST(ServiceStateTest, KeyValueStore) {
  ServiceState s = MakeState();
  EXPECT_FALSE(s.KvGet("k").has_value());
  s.KvSet("k", "v1");
  s.KvSet("k", "v2");
  ASSERT_TRUE(s.KvGet("k").has_value());
  EXPECT_EQ(*s.KvGet("k"), "v2");
}

TEST(ServiceStateTest, BarrierPassesWhenEveryTaskArrived) {
  ServiceState s = MakeState();
  ASSERT_TRUE(s.ArriveAtBarrier("b", "chief:0").ok());
  ASSERT_TRUE(s.ArriveAtBarrier("b", "worker:1").ok());
  ASSERT_TRUE(s.ArriveAtBarrier("b", "worker:1").ok());
  EXPECT_EQ(s.MissingAtBarrier("b"), (std::vector<std::string>{"worker:0"}));
  EXPECT_EQ(s.MissingAtBarrier("other"), kTasks);
  ASSERT_TRUE(s.ArriveAtBarrier("b", "worker:0").ok());
  EXPECT_TRUE(s.MissingAtBarrier("b").empty());
  EXPECT_EQ(s.ArriveAtBarrier("b", "worker:9").code(), Code::kInvalidArgument);
}

TEST(ServiceStateTest, SilentTaskIsDeclaredFailedOnce) {
  ServiceState s = MakeState();
  for (const auto& t : kTasks) ASSERT_TRUE(s.Register(t, 1, kJob).ok());
  Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0).ok());
  ASSERT_TRUE(s.Heartbeat("worker:1", 1, t0).ok());
  // worker:0 never heartbeats: it is not watched yet, so it is never declared failed.
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(150)).empty());
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0 + milliseconds(150)).ok());

  std::vector<FailedTaskInfo> failed = s.DetectFailures(t0 + milliseconds(300));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].task, "worker:1");
  EXPECT_NE(failed[0].reason.find("no heartbeat from worker:1 for 300 ms"), std::string::npos) << failed[0].reason;
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(310)).empty());  // reported once
  ASSERT_EQ(s.failed_tasks().size(), 1u);
}

TEST(ServiceStateTest, ShutDownTaskIsNotFailed) {
  ServiceState s = MakeState();
  for (const auto& t : kTasks) ASSERT_TRUE(s.Register(t, 1, kJob).ok());
  Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(s.Heartbeat("worker:0", 1, t0).ok());
  ASSERT_TRUE(s.Shutdown("worker:0").ok());
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(1000)).empty());
  EXPECT_EQ(s.MissingShutdowns(), (std::vector<std::string>{"chief:0", "worker:1"}));
}

TEST(ServiceStateTest, HeartbeatChecksRegistrationAndIncarnation) {
  ServiceState s = MakeState();
  Clock::time_point t0 = Clock::now();
  EXPECT_EQ(s.Heartbeat("worker:0", 1, t0).code(), Code::kFailedPrecondition);
  ASSERT_TRUE(s.Register("worker:0", 1, kJob).ok());
  ASSERT_TRUE(s.Heartbeat("worker:0", 1, t0).ok());
  // The process restarts: the new incarnation is accepted and the old one is told to go.
  ASSERT_TRUE(s.Register("worker:0", 2, kJob).ok());
  EXPECT_EQ(s.Heartbeat("worker:0", 1, t0).code(), Code::kAborted);
  // The restarted process has not heartbeated yet, so the old one's silence is not held against it.
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(1000)).empty());
  EXPECT_TRUE(s.Heartbeat("worker:0", 2, t0 + milliseconds(1000)).ok());
}

TEST(ServiceStateTest, JoinTasks) {
  EXPECT_EQ(JoinTasks({}), "");
  EXPECT_EQ(JoinTasks({"a", "b"}), "a, b");
}

}  // namespace
}  // namespace ringtrain::coordination
