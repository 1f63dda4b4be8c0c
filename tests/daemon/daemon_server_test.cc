// The chief daemon's service over real gRPC on loopback (daemon/daemon_server.h): every
// method is refused without the cluster secret or with another one, a daemon's poll is
// refused when its proof names another task, and the secret's holder is served.
#include "daemon/daemon_server.h"

#include <gtest/gtest.h>

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

TEST_F(DaemonServerTest, APollForATaskOutsideTheClusterIsRefused) {
  auto poll = Client(secret_, "worker:9").Poll(0, {});
  EXPECT_EQ(poll.status().code(), Code::kInvalidArgument) << poll.status().ToString();
}

}  // namespace
}  // namespace ringtrain::daemon
