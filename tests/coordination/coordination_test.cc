// The coordination service and client over loopback gRPC, in one process. Tasks are
// clients in threads; servers listen on 127.0.0.1 with an ephemeral port.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"

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

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(CoordinationTest, RegisterAllThenWaitForAllSucceeds) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  auto chief = MakeClient(server->port(), "chief:0");
  auto worker = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(chief->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  // The chief waits in a thread while the worker registers.
  auto waited = std::async(std::launch::async, [&] { return chief->WaitForAll(Deadline::After(milliseconds(10000))); });
  ASSERT_TRUE(worker->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  EXPECT_TRUE(worker->WaitForAll(Deadline::After(milliseconds(5000))).ok());
  Status s = waited.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(CoordinationTest, WaitForAllNamesTheMissingTask) {
  auto server = StartServer(kThreeTasks);
  ASSERT_NE(server, nullptr);
  auto chief = MakeClient(server->port(), "chief:0");
  auto worker = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(chief->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  ASSERT_TRUE(worker->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  Status s = chief->WaitForAll(Deadline::After(milliseconds(400)), milliseconds(100));
  ASSERT_EQ(s.code(), Code::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), "1 of 3 tasks to register: worker:1")) << s.message();
}

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

// Collects on_failure calls; the wait is bounded and generous, the assertion is on content.
struct FailureSink {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> messages;
  std::function<void(const std::string&)> Callback() {
    return [this](const std::string& m) {
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(m);
      cv.notify_all();
    };
  }
  bool WaitForOne(milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, limit, [this] { return !messages.empty(); });
  }
};

TEST(CoordinationTest, TaskThatStopsHeartbeatingIsReportedToTheOthers) {
  auto server = StartServer(kTwoTasks, milliseconds(200));
  ASSERT_NE(server, nullptr);
  auto chief = MakeClient(server->port(), "chief:0");
  auto worker = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(chief->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  ASSERT_TRUE(worker->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  FailureSink chief_sink, worker_sink;
  chief->StartHeartbeat(milliseconds(50), milliseconds(1000), chief_sink.Callback());
  worker->StartHeartbeat(milliseconds(50), milliseconds(1000), worker_sink.Callback());
  std::this_thread::sleep_for(milliseconds(100));
  worker->StopHeartbeat();  // the worker hangs

  ASSERT_TRUE(chief_sink.WaitForOne(milliseconds(10000)));
  chief->StopHeartbeat();
  std::lock_guard<std::mutex> lock(chief_sink.mu);
  ASSERT_EQ(chief_sink.messages.size(), 1u);  // reported once
  EXPECT_TRUE(Contains(chief_sink.messages[0], "no heartbeat from worker:0")) << chief_sink.messages[0];
}

TEST(CoordinationTest, LosingTheServiceIsReported) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto worker = MakeClient(server->port(), "worker:0");
  ASSERT_TRUE(worker->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  FailureSink sink;
  worker->StartHeartbeat(milliseconds(50), milliseconds(200), sink.Callback());
  server->Stop();
  ASSERT_TRUE(sink.WaitForOne(milliseconds(10000)));
  worker->StopHeartbeat();
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_TRUE(Contains(sink.messages[0], "lost contact with the chief's coordination service")) << sink.messages[0];
}

TEST(CoordinationTest, RestartedTaskIsAcceptedAndTheOldProcessIsToldToExit) {
  auto server = StartServer(kTwoTasks);
  ASSERT_NE(server, nullptr);
  auto old_process = MakeClient(server->port(), "worker:0", /*incarnation=*/1);
  ASSERT_TRUE(old_process->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  FailureSink sink;
  old_process->StartHeartbeat(milliseconds(50), milliseconds(1000), sink.Callback());
  auto restarted = MakeClient(server->port(), "worker:0", /*incarnation=*/2);
  ASSERT_TRUE(restarted->Register(kJob, Deadline::After(milliseconds(5000))).ok());
  ASSERT_TRUE(sink.WaitForOne(milliseconds(10000)));
  old_process->StopHeartbeat();
  std::lock_guard<std::mutex> lock(sink.mu);
  EXPECT_TRUE(Contains(sink.messages[0], "replaced by a restarted process")) << sink.messages[0];
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
  std::unique_ptr<Store> store = MakeClient(server->port(), "chief:0");
  PrefixStore prefixed(store.get(), "ring0/");
  ASSERT_TRUE(prefixed.Set("k", "v").ok());
  auto got = store->Get("ring0/k", Deadline::After(milliseconds(2000)));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "v");
}

}  // namespace
}  // namespace ringtrain::coordination
