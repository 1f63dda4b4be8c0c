// With recovery "restart" (TensorFlow's behaviour), a worker that dies or hangs
// mid-training makes the others exit within a bound, with exit code 5 and an error
// naming the peer -- nobody waits forever. (Recovery in place: recovery_test.cc.)
#include <gtest/gtest.h>

#include <signal.h>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

// A job long enough to be interrupted (hundreds of short epochs).
std::string LongJob(const std::string& dir) {
  auto job = SmallSyntheticJob(dir);
  job["epochs"] = 2000;
  job["recovery"] = "restart";
  WriteFile(dir + "/job.json", job.dump());
  return dir + "/job.json";
}

std::map<std::string, std::string> FailureEnv(const std::vector<int>& ports, int index) {
  return {{"TF_CONFIG", LoopbackTfConfig(ports, index)},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "200"},
          {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "2000"},
          {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "120"},
          {"RINGTRAIN_NUM_THREADS", "1"}};
}

// Two workers of a long job; worker 1 is stopped with `signal` once it trains.
// Returns what the chief did.
ProcessResult ChiefAfterWorkerGets(int signal) {
  TempDir tmp;
  std::string job = LongJob(tmp.path());
  auto ports = FreePorts(2);
  Process chief(RingtrainBinary(), {"worker", "--job", job}, FailureEnv(ports, 0));
  Process other(RingtrainBinary(), {"worker", "--job", job}, FailureEnv(ports, 1));
  EXPECT_TRUE(other.WaitForOutput("Epoch 2/2000", 120));
  other.Kill(signal);
  ProcessResult r = chief.Wait(60);
  other.Kill(SIGKILL);
  return r;
}

TEST(FailureTest, KilledWorkerFailsTheOthers) {
  ProcessResult r = ChiefAfterWorkerGets(SIGKILL);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("rank 1"), std::string::npos) << r.output;
}

// A hung worker (SIGSTOP) keeps its sockets open: only the heartbeat timeout finds
// it, and the chief names it.
TEST(FailureTest, HungWorkerIsDeclaredFailed) {
  ProcessResult r = ChiefAfterWorkerGets(SIGSTOP);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("no heartbeat from worker:1"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
