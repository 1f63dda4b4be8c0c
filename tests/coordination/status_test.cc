// What GetStatus answers: the status board over the service state (without gRPC), its
// JSON (the schema `ringtrain status --json` and the live page share), and the call end
// to end over loopback gRPC, refused without the cluster secret.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "coordination/status_board.h"
#include "coordination/status_client.h"
#include "coordination/status_json.h"

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

const std::vector<std::string> kStatusTasks = {"chief:0", "worker:1"};
const std::vector<std::string> kHosts = {"127.0.0.1:2222", "127.0.0.1:2223"};
const char* kStatusJob = R"({"model": "mlp"})";

TaskProgress Progress(int64_t global_step, double compute_s, int rank) {
  TaskProgress p;
  p.set_global_step(global_step);
  p.set_epoch(2);
  p.set_epochs(5);
  p.set_step(static_cast<int>(global_step - 70));
  p.set_steps_per_epoch(70);
  p.set_compute_s(compute_s);
  p.set_input_wait_s(0.001);
  p.set_allreduce_wait_s(0.004);
  p.set_loss(0.25 + rank * 0.1);
  p.set_accuracy(0.9);
  p.set_images_per_sec(1000);
  p.set_steps_per_sec(10);
  p.set_last_backup_step(100);
  p.set_last_backup_unix_time(1000.0);
  p.set_state("running");
  p.set_rank(rank);
  return p;
}

TEST(StatusBoardTest, TasksJobAndNullsForWhatIsNotKnown) {
  ServiceState state(kStatusTasks, "", milliseconds(10000));
  StatusBoard board(kStatusTasks, kHosts, {});
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(state.Register("chief:0", 0x9f3a000000000001ULL, "").ok());
  ASSERT_TRUE(state.Heartbeat("chief:0", 0x9f3a000000000001ULL, t0).ok());
  board.OnProgress("chief:0", Progress(107, 0.031, 0), 1003.0);

  GetStatusResponse r;
  board.Fill(state, t0 + milliseconds(400), 1003.2, &r);
  json j = json::parse(StatusToJson(r));
  const json& chief = j["tasks"][0];
  EXPECT_EQ(chief["task"], "chief:0");
  EXPECT_EQ(chief["state"], "running");
  EXPECT_EQ(chief["host"], "127.0.0.1:2222");
  EXPECT_EQ(chief["incarnation"], "9f3a000000000001");
  EXPECT_EQ(chief["step"], 107);
  EXPECT_NEAR(chief["heartbeat_age_s"].get<double>(), 0.4, 1e-6);
  EXPECT_DOUBLE_EQ(chief["compute_s"].get<double>(), 0.031);
  EXPECT_DOUBLE_EQ(chief["input_wait_s"].get<double>(), 0.001);
  EXPECT_DOUBLE_EQ(chief["allreduce_wait_s"].get<double>(), 0.004);
  EXPECT_EQ(chief["straggler"], false);
  EXPECT_EQ(chief["virtual_ranks"], json::array({0}));
  // Not registered yet: everything about it is unknown.
  const json& w = j["tasks"][1];
  EXPECT_EQ(w["task"], "worker:1");
  EXPECT_TRUE(w["state"].is_null());
  EXPECT_TRUE(w["incarnation"].is_null());
  EXPECT_TRUE(w["step"].is_null());
  EXPECT_TRUE(w["heartbeat_age_s"].is_null());
  EXPECT_TRUE(w["compute_s"].is_null());
  EXPECT_EQ(w["host"], "127.0.0.1:2223");

  const json& job = j["job"];
  EXPECT_EQ(job["epoch"], 2);
  EXPECT_EQ(job["epochs"], 5);
  EXPECT_EQ(job["step"], 37);
  EXPECT_EQ(job["steps_per_epoch"], 70);
  EXPECT_EQ(job["global_step"], 107);
  EXPECT_EQ(job["total_steps"], 350);
  EXPECT_DOUBLE_EQ(job["images_per_sec"].get<double>(), 1000);
  EXPECT_NEAR(job["eta_s"].get<double>(), 24.3, 1e-9);  // 243 steps at 10 steps/s
  EXPECT_DOUBLE_EQ(job["loss"].get<double>(), 0.25);
  EXPECT_EQ(job["last_backup_step"], 100);
  EXPECT_NEAR(job["last_backup_age_s"].get<double>(), 3.2, 1e-9);
  EXPECT_TRUE(job["generation"].is_null());  // none formed yet
  EXPECT_EQ(j["events"], json::array());
  EXPECT_EQ(j["stragglers"], json::array());
}

TEST(StatusBoardTest, BeforeAnyStepTheJobIsUnknownAndTasksAreRegistered) {
  ServiceState state(kStatusTasks, "", milliseconds(10000));
  StatusBoard board(kStatusTasks, kHosts, {});
  ASSERT_TRUE(state.Register("chief:0", 1, "").ok());
  GetStatusResponse r;
  board.Fill(state, Clock::now(), 1.0, &r);
  json j = json::parse(StatusToJson(r));
  EXPECT_EQ(j["tasks"][0]["state"], "registered");
  for (const char* k : {"epoch", "global_step", "images_per_sec", "eta_s", "loss", "last_backup_step"}) {
    EXPECT_TRUE(j["job"][k].is_null()) << k;
  }
}

TEST(StatusBoardTest, FailuresStragglersAndRecoveriesAreEventsAndStates) {
  ServiceState state(kStatusTasks, "", milliseconds(1000));
  StatusBoard board(kStatusTasks, kHosts, {0.2, 3});
  const Clock::time_point t0 = Clock::now();
  for (const auto& t : kStatusTasks) {
    ASSERT_TRUE(state.Register(t, 1, "").ok());
    ASSERT_TRUE(state.Heartbeat(t, 1, t0).ok());
    ASSERT_TRUE(state.ArriveAtRendezvous(t, 1, -1, "").ok());
  }
  board.OnGeneration(state.generation(), state.generation_broken(), state.broken_reason(), 10.0);
  // worker:1 computes 3x as long for 3 steps, reported in one heartbeat each.
  TaskProgress chief = Progress(73, 0.03, 0), worker = Progress(73, 0.09, 1);
  for (int64_t s = 71; s <= 73; ++s) {
    StepTime* a = chief.add_recent_steps();
    a->set_step(s);
    a->set_compute_s(0.03);
    StepTime* b = worker.add_recent_steps();
    b->set_step(s);
    b->set_compute_s(0.09);
  }
  StatusEvent* fallback = worker.add_events();
  fallback->set_unix_time(10.5);
  fallback->set_kind("backup_fallback");
  fallback->set_message("Backup b/ckpt-60.json is corrupted (bad checksum); using the previous backup instead.");
  board.OnProgress("worker:1", worker, 11.0);
  board.OnProgress("chief:0", chief, 11.5);
  // worker:1 then falls silent: declared failed, the generation breaks, and a new one forms.
  ASSERT_EQ(state.DetectFailures(t0 + milliseconds(1500)).size(), 2u);
  board.AddEvent("failure", "worker:1", "worker:1 failed: no heartbeat", 12.0);
  board.OnGeneration(state.generation(), true, "worker:1 failed", 12.0);
  board.OnGeneration(state.generation() + 1, false, "", 14.5);

  GetStatusResponse r;
  board.Fill(state, t0 + milliseconds(1500), 15.0, &r);
  json j = json::parse(StatusToJson(r, 2));
  EXPECT_EQ(j["tasks"][1]["state"], "failed");
  EXPECT_EQ(j["tasks"][1]["straggler"], true);
  ASSERT_EQ(j["stragglers"].size(), 1u);
  EXPECT_EQ(j["stragglers"][0]["task"], "worker:1");
  EXPECT_EQ(j["stragglers"][0]["steps"], 3);
  EXPECT_DOUBLE_EQ(j["stragglers"][0]["compute_s"].get<double>(), 0.09);
  EXPECT_DOUBLE_EQ(j["stragglers"][0]["median_compute_s"].get<double>(), 0.06);
  ASSERT_EQ(j["events"].size(), 4u) << j.dump(2);
  EXPECT_EQ(j["events"][0]["kind"], "backup_fallback");  // the worker's own event, with its time
  EXPECT_EQ(j["events"][0]["task"], "worker:1");
  EXPECT_EQ(j["events"][0]["unix_time"], 10.5);
  EXPECT_EQ(j["events"][1]["kind"], "straggler");
  EXPECT_EQ(j["events"][1]["task"], "worker:1");
  EXPECT_EQ(j["events"][2]["kind"], "failure");
  EXPECT_EQ(j["events"][3]["kind"], "recovery");
  EXPECT_EQ(j["events"][3]["message"],
            "recovered in place: generation 1 formed 2.5 s after generation 0 broke (worker:1 failed)");
}

// Elastic: worker:1's rank hosted in the chief's process is shown as such.
TEST(StatusBoardTest, AHostedTaskNamesTheTaskWhoseProcessRunsIt) {
  ServiceState state(kStatusTasks, "", milliseconds(200));
  StatusBoard board(kStatusTasks, kHosts, {});
  const Clock::time_point t0 = Clock::now();
  state.SetElastic({true, 1, milliseconds(0)}, kStatusTasks, t0);
  ASSERT_TRUE(state.Register("chief:0", 1, "").ok());
  ASSERT_TRUE(state.Register("worker:1", 1, "").ok());
  ASSERT_TRUE(state.Heartbeat("chief:0", 1, t0).ok());
  ASSERT_TRUE(state.Heartbeat("worker:1", 1, t0).ok());
  ASSERT_TRUE(state.Heartbeat("chief:0", 1, t0 + milliseconds(300)).ok());
  state.DetectFailures(t0 + milliseconds(300));
  ASSERT_EQ(state.AdoptionsFor("chief:0", t0 + milliseconds(300)), std::vector<std::string>{"worker:1"});
  ASSERT_TRUE(state.Register("worker:1", 2, "").ok());
  GetStatusResponse r;
  board.Fill(state, t0 + milliseconds(400), 1003.2, &r);
  json j = json::parse(StatusToJson(r));
  EXPECT_TRUE(j["tasks"][0]["hosted_by"].is_null()) << j.dump();
  EXPECT_EQ(j["tasks"][1]["hosted_by"], "chief:0") << j.dump();
}

TEST(StatusBoardTest, EventsAreBounded) {
  StatusBoard board(kStatusTasks, kHosts, {});
  for (int i = 0; i < 200; ++i) board.AddEvent("failure", "worker:1", "event " + std::to_string(i), i);
  ServiceState state(kStatusTasks, "", milliseconds(1000));
  GetStatusResponse r;
  board.Fill(state, Clock::now(), 300, &r);
  ASSERT_EQ(r.events_size(), static_cast<int>(StatusBoard::kMaxEvents));
  EXPECT_EQ(r.events(0).message(), "event 150");
  EXPECT_EQ(r.events(r.events_size() - 1).message(), "event 199");
}

// ---- end to end over loopback gRPC ------------------------------------------------

security::ClusterSecret StatusSecret(const std::string& text) {
  auto s = security::ClusterSecret::FromValue(text);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : security::ClusterSecret();
}
const std::string kSecret = "0123456789abcdef0123456789abcdef";

std::unique_ptr<CoordinationServer> StartServer(std::function<void(GetStatusResponse*)> extras = nullptr) {
  ServerOptions o;
  o.status_extras = std::move(extras);
  o.address = "127.0.0.1:0";
  o.expected_tasks = kStatusTasks;
  o.task_hosts = kHosts;
  o.reference_job_json = kStatusJob;
  o.cluster_secret = StatusSecret(kSecret);
  o.cluster_hosts = {"127.0.0.1"};
  auto server = CoordinationServer::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

StatusOr<GetStatusResponse> Ask(int port, const security::ClusterSecret& secret) {
  StatusClientOptions o;
  o.chief_address = "127.0.0.1:" + std::to_string(port);
  o.cluster_secret = secret;
  o.timeout = milliseconds(10000);
  return GetClusterStatus(o);
}

TEST(GetStatusTest, RefusedWithoutTheSecretOrWithAnotherOne) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto none = Ask(server->port(), security::ClusterSecret());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kPermissionDenied) << none.status().ToString();
  EXPECT_NE(none.status().message().find("cluster secret"), std::string::npos) << none.status().message();
  auto wrong = Ask(server->port(), StatusSecret("another secret of 32 bytes......"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kPermissionDenied) << wrong.status().ToString();
}

TEST(GetStatusTest, HeartbeatsCarryProgressThatStatusShows) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ClientOptions o;
  o.service_address = "127.0.0.1:" + std::to_string(server->port());
  o.task = "worker:1";
  o.incarnation = 42;
  o.rpc_timeout = milliseconds(3000);
  o.cluster_secret = StatusSecret(kSecret);
  CoordinationClient client(o);
  ASSERT_TRUE(client.Register(kStatusJob, Deadline::After(milliseconds(10000))).ok());
  client.SetProgressSource([](TaskProgress* p) {
    *p = Progress(90, 0.05, 1);
    return true;
  });
  client.StartHeartbeat(milliseconds(20), milliseconds(10000), [](const ClusterEvent&) {});
  // Asked until a heartbeat has landed (bounded; no timing is asserted).
  StatusOr<GetStatusResponse> r = UnavailableError("not asked");
  for (int i = 0; i < 500; ++i) {
    r = Ask(server->port(), StatusSecret(kSecret));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->tasks(1).has_progress()) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  client.StopHeartbeat();
  ASSERT_EQ(r->tasks_size(), 2);
  EXPECT_EQ(r->tasks(0).state(), "");  // the chief never registered here
  const TaskStatus& w = r->tasks(1);
  EXPECT_EQ(w.task(), "worker:1");
  EXPECT_EQ(w.state(), "running");
  EXPECT_EQ(w.host(), "127.0.0.1:2223");
  EXPECT_EQ(w.incarnation(), 42u);
  EXPECT_EQ(w.progress().global_step(), 90);
  EXPECT_GE(w.heartbeat_age_s(), 0);
  EXPECT_TRUE(r->job().known());
  EXPECT_EQ(r->job().global_step(), 90);
}

TEST(GetStatusTest, RowsOutsideTheRingFollowTheTrainingTasks) {
  int calls = 0;
  auto server = StartServer([&calls](GetStatusResponse* r) {
    ++calls;
    TaskStatus* t = r->add_tasks();
    t->set_task("evaluator:0");
    t->set_state("running");
  });
  ASSERT_NE(server, nullptr);
  auto r = Ask(server->port(), StatusSecret(kSecret));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->tasks_size(), 3);
  EXPECT_EQ(r->tasks(0).task(), kStatusTasks[0]);
  EXPECT_EQ(r->tasks(1).task(), kStatusTasks[1]);
  EXPECT_EQ(r->tasks(2).task(), "evaluator:0");
  EXPECT_EQ(r->tasks(2).state(), "running");
  EXPECT_EQ(calls, 1);
}

TEST(GetStatusTest, AnUnreachableChiefIsUnavailable) {
  StatusClientOptions o;
  o.chief_address = "127.0.0.1:1";  // nothing listens on port 1
  o.timeout = milliseconds(3000);
  auto r = GetClusterStatus(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  EXPECT_NE(r.status().message().find("127.0.0.1:1"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ringtrain::coordination
