// The coordination service and client over loopback gRPC, in one process. Tasks are
// clients in threads; servers listen on 127.0.0.1 with an ephemeral port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "testing/text.h"

namespace ringtrain::coordination {
namespace {

using std::chrono::milliseconds;

const char* kJob = R"({"model": "mlp", "optimizer": {"learning_rate": 0.001}})";
const std::vector<std::string> kTwoTasks = {"chief:0", "worker:0"};
const std::vector<std::string> kThreeTasks = {"chief:0", "worker:0", "worker:1"};

std::unique_ptr<CoordinationServer> StartServer(const std::vector<std::string>& tasks,
                                                milliseconds heartbeat_timeout = milliseconds(10000),
                                                const std::string& address = "127.0.0.1:0") {
  ServerOptions o;
  o.address = address;
  o.expected_tasks = tasks;
  o.reference_job_json = kJob;
  o.heartbeat_timeout = heartbeat_timeout;
  auto server = CoordinationServer::Start(o);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<CoordinationClient> MakeClient(int port, const std::string& task, uint64_t incarnation = 1) {
  ClientOptions o;
  o.service_address = "127.0.0.1:" + std::to_string(port);
  o.task = task;
  o.incarnation = incarnation;
  o.rpc_timeout = milliseconds(2000);
  return std::make_unique<CoordinationClient>(o);
}

// A loopback port that was free a moment ago (nothing bound while we return it).
int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

using ringtrain::testing::Contains;

TEST(CoordinationTest, WorkerThatStartsBeforeTheChiefRegistersOnceItIsUp) {
  int port = PickFreePort();
  auto worker = MakeClient(port, "worker:0");
  std::unique_ptr<CoordinationServer> server;
  std::thread chief([&] {
    std::this_thread::sleep_for(milliseconds(300));
    server = StartServer(kTwoTasks, milliseconds(10000), "127.0.0.1:" + std::to_string(port));
  });
  Status s = worker->Register(kJob, Deadline::After(milliseconds(10000)));
  chief.join();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(CoordinationTest, RegisterWithNoChiefTimesOutSayingWhere) {
  int port = PickFreePort();
  auto worker = MakeClient(port, "worker:0");
  Status s = worker->Register(kJob, Deadline::After(milliseconds(300)));
  ASSERT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "127.0.0.1:" + std::to_string(port))) << s.message();
}

TEST(CoordinationTest, DifferentJobIsRefusedNamingTheField) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto worker = MakeClient(server->port(), "worker:0");
  Status s = worker->Register(R"({"model": "mlp", "optimizer": {"learning_rate": 0.01}})",
                              Deadline::After(milliseconds(5000)));
  ASSERT_EQ(s.code(), Code::kPermissionDenied) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "/optimizer/learning_rate")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "chief: 0.001, worker:0: 0.01")) << s.message();
}

TEST(CoordinationTest, UnknownTaskIsRefused) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto stranger = MakeClient(server->port(), "worker:7");
  Status s = stranger->Register(kJob, Deadline::After(milliseconds(5000)));
  ASSERT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "task 'worker:7' is not in this cluster's TF_CONFIG")) << s.message();
}

TEST(CoordinationTest, SecondServerOnTheSamePortFailsToListen) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  ServerOptions o;
  o.address = "127.0.0.1:" + std::to_string(server->port());
  o.expected_tasks = kTwoTasks;
  auto second = CoordinationServer::Start(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_TRUE(Contains(second.status().message(), "cannot listen on " + o.address)) << second.status().message();
}

TEST(CoordinationTest, KeyValueSetAndGet) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto a = MakeClient(server->port(), "chief:0");
  auto b = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(a->Set("rank0/addr", std::string("127.0.0.1:5000\0x", 16)).ok());
  auto got = b->Get("rank0/addr", Deadline::After(milliseconds(5000)));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, std::string("127.0.0.1:5000\0x", 16));  // values are bytes

  // Get waits for a Set that comes later.
  auto later = std::async(std::launch::async, [&] { return b->Get("late", Deadline::After(milliseconds(10000))); });
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(a->Set("late", "here").ok());
  auto late = later.get();
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_EQ(*late, "here");

  // And times out naming the key.
  auto missing = b->Get("never", Deadline::After(milliseconds(300)));
  ASSERT_EQ(missing.status().code(), Code::kDeadlineExceeded);
  EXPECT_TRUE(Contains(missing.status().message(), "'never'")) << missing.status().message();
}

TEST(CoordinationTest, BarrierAcrossThreeTasks) {
  auto server = StartServer(kThreeTasks);
  ASSERT_NE(server, nullptr);
  std::vector<std::future<Status>> results;
  for (const auto& task : kThreeTasks) {
    results.push_back(std::async(std::launch::async, [&, task] {
      auto client = MakeClient(server->port(), task);
      RT_RETURN_IF_ERROR(client->Register(kJob, Deadline::After(milliseconds(5000))));
      RT_RETURN_IF_ERROR(client->Barrier("first", Deadline::After(milliseconds(10000))));
      return client->Barrier("second", Deadline::After(milliseconds(10000)));
    }));
  }
  for (auto& r : results) {
    Status s = r.get();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST(CoordinationTest, BarrierTimeoutNamesTheTaskThatDidNotArrive) {
  auto server = StartServer(kThreeTasks);
  ASSERT_NE(server, nullptr);
  auto w0 = std::async(std::launch::async, [&] {
    return MakeClient(server->port(), "worker:0")->Barrier("b", Deadline::After(milliseconds(500)));
  });
  Status s = MakeClient(server->port(), "chief:0")->Barrier("b", Deadline::After(milliseconds(500)));
  ASSERT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "1 of 3 tasks did not arrive: worker:1")) << s.message();
  EXPECT_EQ(w0.get().code(), Code::kDeadlineExceeded);
}

// Collects heartbeat events; waits are bounded and generous, assertions are on content.
struct EventSink {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<ClusterEvent> events;
  std::function<void(const ClusterEvent&)> Callback() {
    return [this](const ClusterEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
      cv.notify_all();
    };
  }
  // Waits for an event of `kind`; returns it, or nullopt after `limit`.
  std::optional<ClusterEvent> WaitFor(ClusterEvent::Kind kind, milliseconds limit = milliseconds(10000)) {
    std::unique_lock<std::mutex> lock(mu);
    std::optional<ClusterEvent> found;
    cv.wait_for(lock, limit, [&] {
      for (const auto& e : events) {
        if (e.kind == kind) found = e;
      }
      return found.has_value();
    });
    return found;
  }
  size_t Count(ClusterEvent::Kind kind) {
    std::lock_guard<std::mutex> lock(mu);
    return std::count_if(events.begin(), events.end(), [&](const ClusterEvent& e) { return e.kind == kind; });
  }
};

// Every client arrives for the generation after `last` at once (in threads); returns the
// generations they got, in order.
std::vector<int64_t> RendezvousAll(const std::vector<CoordinationClient*>& clients, int64_t last) {
  std::vector<std::future<StatusOr<RendezvousResult>>> results;
  for (auto* c : clients) {
    results.push_back(std::async(std::launch::async, [c, last] {
      return c->Rendezvous(last, "test", Deadline::After(milliseconds(20000)), milliseconds(1000));
    }));
  }
  std::vector<int64_t> generations;
  for (auto& r : results) {
    auto got = r.get();
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    generations.push_back(got.ok() ? got->generation : -2);
  }
  return generations;
}

std::unique_ptr<CoordinationClient> RegisteredClient(int port, const std::string& task, uint64_t incarnation = 1) {
  auto client = MakeClient(port, task, incarnation);
  Status s = client->Register(kJob, Deadline::After(milliseconds(5000)));
  EXPECT_TRUE(s.ok()) << s.ToString();
  return client;
}

TEST(CoordinationTest, RestartedTaskBreaksTheGenerationAndTheNextOneIncludesIt) {
  auto server = StartServer(kThreeTasks);
  ASSERT_NE(server, nullptr);
  auto chief = RegisteredClient(server->port(), "chief:0");
  auto w0 = RegisteredClient(server->port(), "worker:0");
  auto w1 = RegisteredClient(server->port(), "worker:1", /*incarnation=*/1);
  EXPECT_EQ(RendezvousAll({chief.get(), w0.get(), w1.get()}, -1), (std::vector<int64_t>{0, 0, 0}));
  EventSink chief_events, w0_events;
  chief->StartHeartbeat(milliseconds(20), milliseconds(5000), chief_events.Callback());
  w0->StartHeartbeat(milliseconds(20), milliseconds(5000), w0_events.Callback());

  w1.reset();  // worker:1 dies; its supervisor starts a new process
  auto w1_new = RegisteredClient(server->port(), "worker:1", /*incarnation=*/2);

  for (EventSink* sink : {&chief_events, &w0_events}) {
    auto broken = sink->WaitFor(ClusterEvent::Kind::kGenerationBroken);
    ASSERT_TRUE(broken.has_value());
    EXPECT_EQ(broken->generation, 0);
    EXPECT_TRUE(Contains(broken->message, "worker:1 restarted (new incarnation)")) << broken->message;
  }
  EXPECT_EQ(RendezvousAll({chief.get(), w0.get(), w1_new.get()}, 0)[0], 1);
  EXPECT_EQ(chief->last_known_generation(), 1);
  chief->StopHeartbeat();
  w0->StopHeartbeat();
  EXPECT_EQ(chief_events.Count(ClusterEvent::Kind::kGenerationBroken), 1u);  // once per generation
}

TEST(CoordinationTest, HeartbeatTimeoutBreaksTheGenerationAndEvictsTheStaleProcess) {
  auto server = StartServer(kTwoTasks, milliseconds(500));
  ASSERT_NE(server, nullptr);
  auto chief = RegisteredClient(server->port(), "chief:0");
  auto worker = RegisteredClient(server->port(), "worker:0");
  EXPECT_EQ(RendezvousAll({chief.get(), worker.get()}, -1), (std::vector<int64_t>{0, 0}));
  EventSink chief_events, worker_events;
  chief->StartHeartbeat(milliseconds(30), milliseconds(5000), chief_events.Callback());
  worker->StartHeartbeat(milliseconds(30), milliseconds(5000), worker_events.Callback());
  std::this_thread::sleep_for(milliseconds(100));
  worker->StopHeartbeat();  // the worker hangs (SIGSTOP)

  auto broken = chief_events.WaitFor(ClusterEvent::Kind::kGenerationBroken);
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->generation, 0);
  EXPECT_TRUE(Contains(broken->message, "no heartbeat from worker:0")) << broken->message;

  // It comes back (SIGCONT): its next heartbeat tells it to exit.
  worker->StartHeartbeat(milliseconds(30), milliseconds(5000), worker_events.Callback());
  auto evicted = worker_events.WaitFor(ClusterEvent::Kind::kEvicted);
  ASSERT_TRUE(evicted.has_value());
  EXPECT_TRUE(Contains(evicted->message, "was declared failed")) << evicted->message;
  auto again = worker->Rendezvous(0, "", Deadline::After(milliseconds(5000)));
  EXPECT_EQ(again.status().code(), Code::kAborted) << again.status().ToString();
  worker->StopHeartbeat();
  chief->StopHeartbeat();
  EXPECT_EQ(worker_events.Count(ClusterEvent::Kind::kEvicted), 1u);
}

TEST(CoordinationTest, RestartedChiefIsRejoinedWithTheNextGenerationNumber) {
  int port = PickFreePort();
  std::string address = "127.0.0.1:" + std::to_string(port);
  auto server = StartServer(kTwoTasks, milliseconds(10000), address);
  ASSERT_NE(server, nullptr);
  auto chief = RegisteredClient(port, "chief:0");
  auto worker = RegisteredClient(port, "worker:0");
  EXPECT_EQ(RendezvousAll({chief.get(), worker.get()}, -1), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(RendezvousAll({chief.get(), worker.get()}, 0), (std::vector<int64_t>{1, 1}));
  EventSink worker_events;
  worker->StartHeartbeat(milliseconds(20), milliseconds(200), worker_events.Callback());

  // The chief process dies with its service.
  chief.reset();
  server.reset();
  ASSERT_TRUE(worker_events.WaitFor(ClusterEvent::Kind::kChiefLost).has_value());
  auto rejoined = std::async(std::launch::async, [&] {
    return worker->Rendezvous(1, "chief lost", Deadline::After(milliseconds(20000)), milliseconds(1000));
  });
  std::this_thread::sleep_for(milliseconds(200));  // the worker retries meanwhile
  server = StartServer(kTwoTasks, milliseconds(10000), address);
  ASSERT_NE(server, nullptr);
  auto new_chief = RegisteredClient(port, "chief:0", /*incarnation=*/2);
  auto chief_gen = new_chief->Rendezvous(-1, "", Deadline::After(milliseconds(20000)));
  ASSERT_TRUE(chief_gen.ok()) << chief_gen.status().ToString();
  EXPECT_EQ(chief_gen->generation, 2);
  auto worker_gen = rejoined.get();
  ASSERT_TRUE(worker_gen.ok()) << worker_gen.status().ToString();
  EXPECT_EQ(worker_gen->generation, 2);
  EXPECT_FALSE(worker_gen->job_finished);
  worker->StopHeartbeat();
}

TEST(CoordinationTest, HeartbeatReportsARestartedService) {
  int port = PickFreePort();
  std::string address = "127.0.0.1:" + std::to_string(port);
  auto server = StartServer(kTwoTasks, milliseconds(10000), address);
  ASSERT_NE(server, nullptr);
  auto worker = RegisteredClient(port, "worker:0");
  EventSink events;
  worker->StartHeartbeat(milliseconds(20), milliseconds(60000), events.Callback());
  server.reset();
  server = StartServer(kTwoTasks, milliseconds(10000), address);
  ASSERT_NE(server, nullptr);
  auto restarted = events.WaitFor(ClusterEvent::Kind::kServiceRestarted);
  ASSERT_TRUE(restarted.has_value());
  EXPECT_TRUE(Contains(restarted->message, "no longer knows worker:0")) << restarted->message;
  worker->StopHeartbeat();
  EXPECT_EQ(events.Count(ClusterEvent::Kind::kServiceRestarted), 1u);
}

TEST(CoordinationTest, RendezvousTimeoutNamesTheMissingTask) {
  auto server = StartServer(kThreeTasks);
  ASSERT_NE(server, nullptr);
  auto chief = RegisteredClient(server->port(), "chief:0");
  auto w0 = RegisteredClient(server->port(), "worker:0");
  auto waiting = std::async(std::launch::async, [&] { return w0->Rendezvous(-1, "", Deadline::After(milliseconds(500))); });
  auto got = chief->Rendezvous(-1, "", Deadline::After(milliseconds(500)), milliseconds(100));
  ASSERT_EQ(got.status().code(), Code::kDeadlineExceeded) << got.status().ToString();
  EXPECT_TRUE(Contains(got.status().message(), "1 of 3 tasks: worker:1")) << got.status().message();
  EXPECT_EQ(waiting.get().status().code(), Code::kDeadlineExceeded);
}

TEST(CoordinationTest, RendezvousAfterTheJobFinishedSaysSo) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto chief = RegisteredClient(server->port(), "chief:0");
  auto worker = RegisteredClient(server->port(), "worker:0");
  auto waiting = std::async(std::launch::async, [&] { return worker->Rendezvous(-1, "", Deadline::After(milliseconds(20000))); });
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(chief->Shutdown(Deadline::After(milliseconds(5000))).ok());
  auto got = waiting.get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->job_finished);
}

TEST(CoordinationTest, LosingTheServiceIsReported) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto worker = RegisteredClient(server->port(), "worker:0");
  EventSink events;
  worker->StartHeartbeat(milliseconds(50), milliseconds(200), events.Callback());
  server->Stop();
  auto lost = events.WaitFor(ClusterEvent::Kind::kChiefLost);
  ASSERT_TRUE(lost.has_value());
  worker->StopHeartbeat();
  EXPECT_TRUE(Contains(lost->message, "lost contact with the chief's coordination service")) << lost->message;
  EXPECT_EQ(events.Count(ClusterEvent::Kind::kChiefLost), 1u);  // once per outage
}

TEST(CoordinationTest, RestartedTaskIsAcceptedAndTheOldProcessIsToldToExit) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto old_process = RegisteredClient(server->port(), "worker:0", /*incarnation=*/1);
  EventSink events;
  old_process->StartHeartbeat(milliseconds(50), milliseconds(1000), events.Callback());
  auto restarted = RegisteredClient(server->port(), "worker:0", /*incarnation=*/2);
  auto evicted = events.WaitFor(ClusterEvent::Kind::kEvicted);
  ASSERT_TRUE(evicted.has_value());
  old_process->StopHeartbeat();
  EXPECT_TRUE(Contains(evicted->message, "replaced by a restarted process")) << evicted->message;
}

TEST(CoordinationTest, StopAnswersPendingLongPolls) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto worker = MakeClient(server->port(), "worker:0");
  auto pending = std::async(std::launch::async, [&] { return worker->Get("never", Deadline::After(milliseconds(60000))); });
  std::this_thread::sleep_for(milliseconds(200));
  server->Stop();
  auto got = pending.get();
  EXPECT_EQ(got.status().code(), Code::kUnavailable) << got.status().ToString();
}

TEST(CoordinationTest, WaitForShutdown) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto chief = MakeClient(server->port(), "chief:0");
  auto worker = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(worker->Shutdown(Deadline::After(milliseconds(5000))).ok());
  Status partial = server->WaitForShutdown(Deadline::After(milliseconds(200)));
  ASSERT_EQ(partial.code(), Code::kDeadlineExceeded) << partial.ToString();
  EXPECT_TRUE(Contains(partial.message(), "chief:0")) << partial.message();
  EXPECT_FALSE(Contains(partial.message(), "worker:0")) << partial.message();

  auto waited = std::async(std::launch::async, [&] { return server->WaitForShutdown(Deadline::After(milliseconds(10000))); });
  ASSERT_TRUE(chief->Shutdown(Deadline::After(milliseconds(5000))).ok());
  Status s = waited.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(CoordinationTest, ClientImplementsStore) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  std::unique_ptr<store::Store> store = MakeClient(server->port(), "chief:0");
  store::PrefixStore prefixed(store.get(), "ring0/");
  ASSERT_TRUE(prefixed.Set("k", "v").ok());
  auto got = store->Get("ring0/k", Deadline::After(milliseconds(2000)));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "v");
}

}  // namespace
}  // namespace ringtrain::coordination
