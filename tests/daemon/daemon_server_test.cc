// The chief daemon's service over real gRPC on loopback (daemon/daemon_server.h): every
// method is refused without the cluster secret or with another one, a daemon's poll is
// refused when its proof names another task, the secret's holder is served, and an idle
// daemon's poll is held until a job is submitted.
#include "daemon/daemon_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "daemon/daemon_client.h"
#include "env/env.h"
#include "testing/temp_dir.h"

namespace ringtrain::daemon {
namespace {

class DaemonServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto secret = security::ClusterSecret::FromValue("the-daemons-secret-0123456789abcdef");
    ASSERT_TRUE(secret.ok());
    secret_ = *secret;
    auto q = jobqueue::JobQueue::Open(env::Default(), tmp_.path() + "/queue.json");
    ASSERT_TRUE(q.ok());
    BoardOptions o;
    o.tasks = {"worker:0", "worker:1"};
    o.chief_task = "worker:0";
    auto b = JobBoard::Make(std::move(q).value(), o, 1.7e9);
    ASSERT_TRUE(b.ok());
    board_ = std::move(b).value();
    DaemonServerOptions s;
    s.address = "127.0.0.1:0";
    s.cluster_secret = secret_;
    s.board = board_.get();
    s.jobs_dir = tmp_.path() + "/jobs";
    auto server = DaemonServer::Start(s);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }
  DaemonClient Client(const security::ClusterSecret& secret, const std::string& caller = "client") {
    DaemonClientOptions o;
    o.address = "127.0.0.1:" + std::to_string(server_->port());
    o.caller = caller;
    o.cluster_secret = secret;
    o.timeout = std::chrono::seconds(5);
    return DaemonClient(o);
  }
  testing::TempDir tmp_;
  security::ClusterSecret secret_;
  std::unique_ptr<JobBoard> board_;
  std::unique_ptr<DaemonServer> server_;
};

void ExpectRefused(const Status& s, const char* what) {
  EXPECT_EQ(s.code(), Code::kPermissionDenied) << what << ": " << s.ToString();
  EXPECT_NE(s.message().find("cluster secret"), std::string::npos) << what << ": " << s.message();
}

TEST_F(DaemonServerTest, EveryMethodIsRefusedWithoutTheSecretOrWithAnother) {
  auto other = security::ClusterSecret::FromValue("another-secret-0123456789abcdef-xyz");
  ASSERT_TRUE(other.ok());
  for (const security::ClusterSecret& s : {security::ClusterSecret(), *other}) {
    DaemonClient c = Client(s, "worker:1");
    ExpectRefused(c.Submit("x", "{}").status(), "Submit");
    ExpectRefused(c.ListJobs().status(), "ListJobs");
    ExpectRefused(c.Cancel(1).status(), "Cancel");
    ExpectRefused(c.JobLog(1, 0).status(), "JobLog");
    ExpectRefused(c.Poll(0, {}).status(), "Poll");
  }
  EXPECT_TRUE(board_->List().empty());
}

TEST_F(DaemonServerTest, TheSecretsHolderIsServed) {
  DaemonClient c = Client(secret_);
  auto id = c.Submit("first", R"({"epochs": 1})");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 1);
  auto list = c.ListJobs();
  ASSERT_TRUE(list.ok());
  EXPECT_NE(list->find("\"first\""), std::string::npos) << *list;
  EXPECT_EQ(list->find("epochs"), std::string::npos) << "the job text is not listed: " << *list;
  auto log = c.JobLog(1, 0);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->state, "queued");
  EXPECT_EQ(c.JobLog(9, 0).status().code(), Code::kNotFound);
  auto poll = Client(secret_, "worker:1").Poll(0, {});
  ASSERT_TRUE(poll.ok()) << poll.status().ToString();
  EXPECT_EQ(poll->job_id, 0);  // worker:0 has not polled yet
  EXPECT_EQ(*c.Cancel(1), "cancelled");
  EXPECT_EQ(c.Cancel(1).status().code(), Code::kFailedPrecondition);
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// An idle daemon's poll with a wait is held: answered at the end of its wait when nothing
// happens, at once when a job is submitted (with the job, started on every daemon).
TEST_F(DaemonServerTest, AnIdleDaemonsPollIsHeldUntilAJobIsSubmitted) {
  DaemonClient chief = Client(secret_, "worker:0");
  DaemonClient other = Client(secret_, "worker:1");
  ASSERT_TRUE(other.Poll(0, {}).ok());  // worker:1 is here and idle
  auto t0 = std::chrono::steady_clock::now();
  auto quiet = chief.Poll(0, {}, std::chrono::milliseconds(400));
  ASSERT_TRUE(quiet.ok()) << quiet.status().ToString();
  EXPECT_EQ(quiet->job_id, 0);
  EXPECT_GE(SecondsSince(t0), 0.35) << "held for its wait";
  EXPECT_LT(SecondsSince(t0), 2.0);

  StatusOr<Assignment> woken = InternalError("not answered");
  double answered_after = 0;
  t0 = std::chrono::steady_clock::now();
  std::thread poller([&] {
    woken = chief.Poll(0, {}, std::chrono::milliseconds(1900));
    answered_after = SecondsSince(t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double submitted_at = SecondsSince(t0);
  ASSERT_TRUE(Client(secret_).Submit("next", R"({"epochs": 1})").ok());
  poller.join();
  ASSERT_TRUE(woken.ok()) << woken.status().ToString();
  EXPECT_EQ(woken->job_id, 1) << "the job started on both daemons";
  EXPECT_EQ(woken->job_text, R"({"epochs": 1})");
  EXPECT_GE(answered_after, submitted_at);
  EXPECT_LT(answered_after - submitted_at, 0.5) << "answered when the job was submitted, not after its wait";
  EXPECT_EQ(board_->current_job(), 1);
}

// Stopping the server answers a held poll at once.
TEST_F(DaemonServerTest, StoppingTheServerAnswersAHeldPoll) {
  DaemonClient chief = Client(secret_, "worker:0");
  StatusOr<Assignment> got = InternalError("not answered");
  auto t0 = std::chrono::steady_clock::now();
  std::thread poller([&] { got = chief.Poll(0, {}, std::chrono::milliseconds(1900)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server_->Stop();
  poller.join();
  EXPECT_LT(SecondsSince(t0), 1.5) << got.status().ToString();
}

TEST_F(DaemonServerTest, APollForATaskOutsideTheClusterIsRefused) {
  auto poll = Client(secret_, "worker:9").Poll(0, {});
  EXPECT_EQ(poll.status().code(), Code::kInvalidArgument) << poll.status().ToString();
}

}  // namespace
}  // namespace ringtrain::daemon
