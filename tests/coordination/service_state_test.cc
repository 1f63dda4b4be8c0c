#include "coordination/service_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;
using Clock = ServiceState::Clock;

const std::vector<std::string> kStateTasks = {"chief:0", "worker:0", "worker:1"};
const char* kStateJob = R"({"optimizer": {"learning_rate": 0.001}})";

ServiceState MakeState() { return ServiceState(kStateTasks, kStateJob, milliseconds(200)); }

TEST(ServiceStateTest, RegistrationTracksMissingTasks) {
  ServiceState s = MakeState();
  EXPECT_EQ(s.MissingRegistrations(), kStateTasks);
  ASSERT_TRUE(s.Register("worker:0", 1, kStateJob).ok());
  ASSERT_TRUE(s.Register("worker:0", 1, kStateJob).ok());  // idempotent
  EXPECT_EQ(s.MissingRegistrations(), (std::vector<std::string>{"chief:0", "worker:1"}));
  ASSERT_TRUE(s.Register("chief:0", 2, kStateJob).ok());
  ASSERT_TRUE(s.Register("worker:1", 3, kStateJob).ok());
  EXPECT_TRUE(s.MissingRegistrations().empty());
}

TEST(ServiceStateTest, RefusesUnknownTasksAndDifferentJobs) {
  ServiceState s = MakeState();
  Status unknown = s.Register("worker:7", 1, kStateJob);
  ASSERT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.message().find("task 'worker:7' is not in this cluster's TF_CONFIG"), std::string::npos);

  Status differs = s.Register("worker:1", 1, R"({"optimizer": {"learning_rate": 0.01}})");
  ASSERT_EQ(differs.code(), Code::kPermissionDenied);
  EXPECT_NE(differs.message().find("/optimizer/learning_rate"), std::string::npos);
  EXPECT_EQ(s.MissingRegistrations().size(), 3u);  // neither was recorded
}

TEST(ServiceStateTest, EmptyReferenceJobDisablesTheCheck) {
  ServiceState s(kStateTasks, "", milliseconds(200));
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
  EXPECT_EQ(s.MissingAtBarrier("other"), kStateTasks);
  ASSERT_TRUE(s.ArriveAtBarrier("b", "worker:0").ok());
  EXPECT_TRUE(s.MissingAtBarrier("b").empty());
  EXPECT_EQ(s.ArriveAtBarrier("b", "worker:9").code(), Code::kInvalidArgument);
}

TEST(ServiceStateTest, SilentTaskIsDeclaredFailedOnce) {
  ServiceState s = MakeState();
  for (const auto& t : kStateTasks) ASSERT_TRUE(s.Register(t, 1, kStateJob).ok());
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

// The service was not running (stopped) from 100 ms to 1100 ms: that second does not
// count against the tasks. A task heard from again is kept; one that stays silent is
// declared failed one timeout (200 ms in MakeState) after the service resumed, with the
// silence the service could observe.
TEST(ServiceStateTest, TheServicesOwnAbsenceDoesNotCountAgainstTasks) {
  ServiceState s = MakeState();
  for (const auto& t : kStateTasks) ASSERT_TRUE(s.Register(t, 1, kStateJob).ok());
  Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0).ok());
  ASSERT_TRUE(s.Heartbeat("worker:1", 1, t0).ok());
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(100)).empty());
  s.DiscountAbsence(milliseconds(1000));
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(1100)).empty()) << "declared failed for the service's own silence";
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0 + milliseconds(1150)).ok());
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(1200)).empty());
  std::vector<FailedTaskInfo> failed = s.DetectFailures(t0 + milliseconds(1300));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].task, "worker:1");
  EXPECT_NE(failed[0].reason.find("no heartbeat from worker:1 for 300 ms"), std::string::npos) << failed[0].reason;
}

TEST(ServiceStateTest, ShutDownTaskIsNotFailed) {
  ServiceState s = MakeState();
  for (const auto& t : kStateTasks) ASSERT_TRUE(s.Register(t, 1, kStateJob).ok());
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
  ASSERT_TRUE(s.Register("worker:0", 1, kStateJob).ok());
  ASSERT_TRUE(s.Heartbeat("worker:0", 1, t0).ok());
  // The process restarts: the new incarnation is accepted and the old one is told to go.
  ASSERT_TRUE(s.Register("worker:0", 2, kStateJob).ok());
  EXPECT_EQ(s.Heartbeat("worker:0", 1, t0).code(), Code::kAborted);
  // The restarted process has not heartbeated yet, so the old one's silence is not held against it.
  EXPECT_TRUE(s.DetectFailures(t0 + milliseconds(1000)).empty());
  EXPECT_TRUE(s.Heartbeat("worker:0", 2, t0 + milliseconds(1000)).ok());
}

// Every task registers (incarnation 1) and heartbeats at t0.
void RegisterAll(ServiceState& s, Clock::time_point t0) {
  for (const auto& t : kStateTasks) {
    ASSERT_TRUE(s.Register(t, 1, kStateJob).ok());
    ASSERT_TRUE(s.Heartbeat(t, 1, t0).ok());
  }
}

// Every task arrives with incarnation 1 and `last`; returns the formed generation (-1 if none).
int64_t ArriveAll(ServiceState& s, int64_t last) {
  for (const auto& t : kStateTasks) {
    Status st = s.ArriveAtRendezvous(t, 1, last, "test");
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  RendezvousInfo info = s.RendezvousStatus("chief:0", last);
  return info.formed ? info.generation : -1;
}

TEST(ServiceStateTest, FirstGenerationFormsWhenEveryTaskArrived) {
  ServiceState s = MakeState();
  RegisterAll(s, Clock::now());
  EXPECT_EQ(s.generation(), -1);
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 1, -1, "").ok());
  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, -1, "").ok());
  RendezvousInfo waiting = s.RendezvousStatus("chief:0", -1);
  EXPECT_FALSE(waiting.formed);
  EXPECT_EQ(waiting.missing, (std::vector<std::string>{"worker:0"}));
  EXPECT_EQ(s.generation(), -1);

  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, -1, "").ok());
  EXPECT_EQ(s.generation(), 0);
  EXPECT_FALSE(s.generation_broken());
  for (const auto& t : kStateTasks) {
    RendezvousInfo info = s.RendezvousStatus(t, -1);
    EXPECT_TRUE(info.formed) << t;
    EXPECT_EQ(info.generation, 0) << t;
    EXPECT_TRUE(info.missing.empty());
  }
  // A retried arrival for a generation already formed changes nothing.
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, -1, "").ok());
  EXPECT_FALSE(s.generation_broken());
  EXPECT_EQ(s.RendezvousStatus("chief:0", 0).missing, kStateTasks);  // nobody arrived for generation 1
}

TEST(ServiceStateTest, MissingListsUnregisteredTasks) {
  ServiceState s = MakeState();
  ASSERT_TRUE(s.Register("chief:0", 1, kStateJob).ok());
  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, -1, "").ok());
  EXPECT_EQ(s.RendezvousStatus("chief:0", -1).missing, (std::vector<std::string>{"worker:0", "worker:1"}));
}

TEST(ServiceStateTest, MemberLeavingBreaksTheGenerationAndTheNextIsOne) {
  ServiceState s = MakeState();
  Clock::time_point t0 = Clock::now();
  RegisterAll(s, t0);
  ASSERT_EQ(ArriveAll(s, -1), 0);

  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, 0, "allreduce failed: peer reset").ok());
  EXPECT_TRUE(s.generation_broken());
  EXPECT_EQ(s.generation(), 0);
  EXPECT_EQ(s.broken_reason(), "worker:0 left generation 0: allreduce failed: peer reset");
  // The others see it in their heartbeats' view of the state.
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0).ok());
  EXPECT_TRUE(s.generation_broken());
  // A second leaver does not overwrite the first reason.
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 1, 0, "other").ok());
  EXPECT_EQ(s.broken_reason(), "worker:0 left generation 0: allreduce failed: peer reset");
  EXPECT_EQ(s.RendezvousStatus("worker:0", 0).missing, (std::vector<std::string>{"chief:0"}));

  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, 0, "").ok());
  EXPECT_EQ(s.generation(), 1);
  EXPECT_FALSE(s.generation_broken());
  EXPECT_EQ(s.broken_reason(), "");
  EXPECT_EQ(s.RendezvousStatus("worker:1", 0).generation, 1);
}

TEST(ServiceStateTest, RestartedIncarnationBreaksTheGenerationAndReplacesItsArrival) {
  ServiceState s = MakeState();
  Clock::time_point t0 = Clock::now();
  RegisterAll(s, t0);
  ASSERT_EQ(ArriveAll(s, -1), 0);

  ASSERT_TRUE(s.Register("worker:1", 2, kStateJob).ok());
  EXPECT_TRUE(s.generation_broken());
  EXPECT_EQ(s.broken_reason(), "worker:1 restarted (new incarnation); its old process is gone");
  // The stale process is told to exit, both by heartbeat and at the rendezvous.
  EXPECT_EQ(s.Heartbeat("worker:1", 1, t0).code(), Code::kAborted);
  EXPECT_EQ(s.ArriveAtRendezvous("worker:1", 1, 0, "").code(), Code::kAborted);

  // The new process has been in no generation: -1 is not "formed" for it.
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 2, -1, "").ok());
  EXPECT_FALSE(s.RendezvousStatus("worker:1", -1).formed);
  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, 0, "").ok());
  // It restarts once more before the others arrive: its arrival goes with it.
  ASSERT_TRUE(s.Register("worker:1", 3, kStateJob).ok());
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, 0, "").ok());
  EXPECT_EQ(s.generation(), 0);
  EXPECT_EQ(s.RendezvousStatus("chief:0", 0).missing, (std::vector<std::string>{"worker:1"}));
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 3, -1, "").ok());
  EXPECT_EQ(s.generation(), 1);
  RendezvousInfo info = s.RendezvousStatus("worker:1", -1);
  EXPECT_TRUE(info.formed);
  EXPECT_EQ(info.generation, 1);
}

TEST(ServiceStateTest, TimedOutTaskBreaksTheGenerationAndOnlyANewIncarnationMayReturn) {
  ServiceState s = MakeState();
  Clock::time_point t0 = Clock::now();
  RegisterAll(s, t0);
  ASSERT_EQ(ArriveAll(s, -1), 0);
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0 + milliseconds(250)).ok());
  ASSERT_TRUE(s.Heartbeat("worker:0", 1, t0 + milliseconds(250)).ok());
  // worker:1 arrives for the next generation, then hangs.
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 1, 0, "stall").ok());

  std::vector<FailedTaskInfo> failed = s.DetectFailures(t0 + milliseconds(300));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].task, "worker:1");
  EXPECT_TRUE(s.generation_broken());
  EXPECT_NE(s.broken_reason().find("worker:1 left generation 0: stall"), std::string::npos) << s.broken_reason();

  // Its process comes back (SIGCONT): told to exit, with the reason.
  Status hb = s.Heartbeat("worker:1", 1, t0 + milliseconds(400));
  ASSERT_EQ(hb.code(), Code::kAborted);
  EXPECT_NE(hb.message().find("was declared failed: no heartbeat from worker:1"), std::string::npos) << hb.message();
  EXPECT_NE(hb.message().find("must exit and be restarted"), std::string::npos) << hb.message();
  EXPECT_EQ(s.ArriveAtRendezvous("worker:1", 1, 0, "").code(), Code::kAborted);

  // The failed task's arrival was dropped; it is missing until a new incarnation arrives.
  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, 0, "").ok());
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, 0, "").ok());
  EXPECT_EQ(s.generation(), 0);
  EXPECT_EQ(s.RendezvousStatus("chief:0", 0).missing, (std::vector<std::string>{"worker:1"}));
  ASSERT_EQ(s.failed_tasks().size(), 1u);

  ASSERT_TRUE(s.Register("worker:1", 2, kStateJob).ok());
  EXPECT_TRUE(s.failed_tasks().empty());
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 2, -1, "").ok());
  EXPECT_EQ(s.generation(), 1);
  EXPECT_TRUE(s.Heartbeat("worker:1", 2, t0 + milliseconds(500)).ok());
}

TEST(ServiceStateTest, FailureBreaksTheGenerationWithItsReason) {
  ServiceState s = MakeState();
  Clock::time_point t0 = Clock::now();
  RegisterAll(s, t0);
  ASSERT_EQ(ArriveAll(s, -1), 0);
  ASSERT_TRUE(s.Heartbeat("chief:0", 1, t0 + milliseconds(250)).ok());
  ASSERT_TRUE(s.Heartbeat("worker:1", 1, t0 + milliseconds(250)).ok());
  ASSERT_EQ(s.DetectFailures(t0 + milliseconds(300)).size(), 1u);
  EXPECT_TRUE(s.generation_broken());
  EXPECT_NE(s.broken_reason().find("no heartbeat from worker:0 for 300 ms"), std::string::npos) << s.broken_reason();
}

TEST(ServiceStateTest, FreshServiceContinuesPastTheTasksGenerations) {
  // The chief restarted: its service forgot the generations, the survivors did not.
  ServiceState s = MakeState();
  RegisterAll(s, Clock::now());
  ASSERT_TRUE(s.ArriveAtRendezvous("chief:0", 1, -1, "").ok());  // the new chief process
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, 5, "chief lost").ok());
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:1", 1, 4, "chief lost").ok());
  EXPECT_EQ(s.generation(), 6);
  EXPECT_EQ(s.RendezvousStatus("worker:0", 5).generation, 6);
  EXPECT_EQ(s.RendezvousStatus("chief:0", -1).generation, 6);
}

TEST(ServiceStateTest, RendezvousRefusesUnknownUnregisteredAndStaleTasks) {
  ServiceState s = MakeState();
  EXPECT_EQ(s.ArriveAtRendezvous("worker:7", 1, -1, "").code(), Code::kInvalidArgument);
  Status unregistered = s.ArriveAtRendezvous("worker:0", 1, -1, "");
  ASSERT_EQ(unregistered.code(), Code::kFailedPrecondition);
  EXPECT_NE(unregistered.message().find("register again"), std::string::npos) << unregistered.message();
  ASSERT_TRUE(s.Register("worker:0", 2, kStateJob).ok());
  EXPECT_EQ(s.ArriveAtRendezvous("worker:0", 1, -1, "").code(), Code::kAborted);
}

TEST(ServiceStateTest, ShutdownFinishesTheJob) {
  ServiceState s = MakeState();
  RegisterAll(s, Clock::now());
  ASSERT_TRUE(s.ArriveAtRendezvous("worker:0", 1, -1, "").ok());
  EXPECT_FALSE(s.RendezvousStatus("worker:0", -1).job_finished);
  ASSERT_TRUE(s.Shutdown("chief:0").ok());
  EXPECT_TRUE(s.job_finished());
  RendezvousInfo info = s.RendezvousStatus("worker:0", -1);
  EXPECT_TRUE(info.job_finished);
  EXPECT_FALSE(info.formed);
}

TEST(ServiceStateTest, JoinTasks) {
  EXPECT_EQ(JoinTasks({}), "");
  EXPECT_EQ(JoinTasks({"a", "b"}), "a, b");
}

// Elastic: five workers in rank order; the heartbeat timeout is 200 ms.
struct ElasticCluster {
  const std::vector<std::string> tasks = {"worker:0", "worker:1", "worker:2", "worker:3", "worker:4"};
  ServiceState s{tasks, kStateJob, milliseconds(200)};
  Clock::time_point t0 = Clock::now();
  std::map<std::string, uint64_t> incarnation;
  ElasticCluster(int min_present, milliseconds wait) {
    s.SetElastic({true, min_present, wait}, tasks, t0);
    for (const auto& t : tasks) EXPECT_TRUE(s.Register(t, incarnation[t] = 1, kStateJob).ok());
    for (const auto& t : tasks) EXPECT_TRUE(s.Heartbeat(t, 1, t0).ok());
  }
  // `task`'s next process (or its adopted copy) registers.
  void Restart(const std::string& task) { EXPECT_TRUE(s.Register(task, ++incarnation[task], kStateJob).ok()); }
  // Every task but `lost` heartbeats at t0 + at; then failures are detected.
  void Lose(const std::vector<std::string>& lost, milliseconds at) {
    for (const auto& t : tasks) {
      if (std::find(lost.begin(), lost.end(), t) == lost.end()) {
        EXPECT_TRUE(s.Heartbeat(t, incarnation[t], t0 + at).ok());
      }
    }
    s.DetectFailures(t0 + at);
  }
};

TEST(ServiceStateTest, ElasticHandsALostTaskToTheNearestPresentTaskBeforeIt) {
  ElasticCluster c(2, milliseconds(0));
  c.Lose({"worker:2", "worker:3"}, milliseconds(300));
  const auto now = c.t0 + milliseconds(300);
  EXPECT_EQ(c.s.AdoptionsFor("worker:1", now), (std::vector<std::string>{"worker:2", "worker:3"}));
  EXPECT_TRUE(c.s.AdoptionsFor("worker:0", now).empty());
  EXPECT_TRUE(c.s.AdoptionsFor("worker:4", now).empty());
  EXPECT_TRUE(c.s.AdoptionsFor("worker:2", now).empty());  // absent tasks host nobody
  // Its registration (the adopted task in worker:1's process) is recorded as hosted.
  c.Restart("worker:2");
  EXPECT_EQ(c.s.HostOf("worker:2"), "worker:1");
  EXPECT_EQ(c.s.HostOf("worker:1"), "");
  // worker:3's nearest present task is now the hosted worker:2: the same process.
  EXPECT_EQ(c.s.AdoptionsFor("worker:2", now), (std::vector<std::string>{"worker:3"}));
  EXPECT_TRUE(c.s.AdoptionsFor("worker:1", now).empty());
}

TEST(ServiceStateTest, ElasticTasksBeforeTheFirstPresentOneGoToIt) {
  ElasticCluster c(1, milliseconds(0));
  c.Lose({"worker:0", "worker:1"}, milliseconds(300));
  EXPECT_EQ(c.s.AdoptionsFor("worker:2", c.t0 + milliseconds(300)),
            (std::vector<std::string>{"worker:0", "worker:1"}));
}

TEST(ServiceStateTest, ElasticWaitsForWaitAndForMinWorkersInTheirOwnProcesses) {
  ElasticCluster c(3, milliseconds(1000));
  c.Lose({"worker:4"}, milliseconds(300));  // declared failed at 300 ms
  EXPECT_TRUE(c.s.AdoptionsFor("worker:3", c.t0 + milliseconds(1200)).empty());  // absent 900 ms < 1 s
  EXPECT_EQ(c.s.AdoptionsFor("worker:3", c.t0 + milliseconds(1300)), (std::vector<std::string>{"worker:4"}));
  c.Restart("worker:4");  // now hosted by worker:3's process
  // worker:2 and worker:3 lost: worker:0, worker:1 in their own processes (2 < 3), worker:4
  // is hosted and does not count.
  c.Lose({"worker:2", "worker:3"}, milliseconds(1400));
  EXPECT_TRUE(c.s.AdoptionsFor("worker:1", c.t0 + milliseconds(5000)).empty());
}

TEST(ServiceStateTest, ElasticGivesAStartingTaskOneHeartbeatTimeoutToRegister) {
  const std::vector<std::string> tasks = {"worker:0", "worker:1"};
  ServiceState s(tasks, kStateJob, milliseconds(200));
  const Clock::time_point t0 = Clock::now();
  s.SetElastic({true, 1, milliseconds(0)}, tasks, t0);
  ASSERT_TRUE(s.Register("worker:0", 1, kStateJob).ok());
  EXPECT_TRUE(s.AdoptionsFor("worker:0", t0 + milliseconds(150)).empty());
  EXPECT_EQ(s.AdoptionsFor("worker:0", t0 + milliseconds(200)), (std::vector<std::string>{"worker:1"}));
  // A successor's service knows the chief is gone: its rank is handed out at once.
  ServiceState successor(tasks, kStateJob, milliseconds(200));
  successor.SetElastic({true, 1, milliseconds(0)}, tasks, t0, {"worker:0"});
  ASSERT_TRUE(successor.Register("worker:1", 1, kStateJob).ok());
  EXPECT_EQ(successor.AdoptionsFor("worker:1", t0), (std::vector<std::string>{"worker:0"}));
  // Without a policy nobody is handed anything.
  ServiceState plain(tasks, kStateJob, milliseconds(200));
  ASSERT_TRUE(plain.Register("worker:0", 1, kStateJob).ok());
  EXPECT_TRUE(plain.AdoptionsFor("worker:0", t0 + milliseconds(5000)).empty());
}

}  // namespace
}  // namespace ringtrain::coordination
