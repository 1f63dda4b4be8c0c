// `ringtrain bench allreduce` under TF_CONFIG when a peer dies (SIGKILL) or hangs
// (SIGSTOP) mid-benchmark: the survivor exits 5 within a bound, naming the peer, on
// both transports (tcp; ring, which is shared memory on one host where built).
#include <gtest/gtest.h>

#include <signal.h>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

struct Case {
  std::string backend;
  int signal;
};
// Names the case in ctest's listing (instead of the bytes of the struct).
void PrintTo(const Case& c, std::ostream* os) { *os << c.backend << (c.signal == SIGKILL ? " SIGKILL" : " SIGSTOP"); }

class BenchFailureTest : public ::testing::TestWithParam<Case> {};

std::map<std::string, std::string> BenchEnv(const std::vector<int>& ports, int index) {
  return {{"TF_CONFIG", LoopbackTfConfig(ports, index)},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "200"},
          {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "1500"},
          {"RINGTRAIN_SHUTDOWN_TIMEOUT_S", "5"}};
}

// A benchmark that runs far longer than the test: one 4 MiB size, a million checked ops.
std::vector<std::string> LongBench(const std::string& backend) {
  return {"bench",       "allreduce", "--backend", backend, "--min_bytes", "4194304", "--max_bytes", "4194304",
          "--iters",     "1000000",   "--warmup",  "0",     "--timeout_s", "5"};
}

TEST_P(BenchFailureTest, SurvivorExitsFiveNamingThePeer) {
  const Case c = GetParam();
  auto ports = FreePorts(2);
  Process chief(RingtrainBinary(), LongBench(c.backend), BenchEnv(ports, 0));
  Process other(RingtrainBinary(), LongBench(c.backend), BenchEnv(ports, 1));
  // Logged once the communicator has formed; the timed ops follow at once.
  ASSERT_TRUE(other.WaitForOutput("benchmarking", 60)) << other.Wait(1).output;
  ASSERT_TRUE(chief.WaitForOutput("busbw_GBps", 30)) << chief.Wait(1).output;
  other.Kill(c.signal);
  ProcessResult r = chief.Wait(60);
  other.Kill(SIGKILL);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 5) << r.output;
  bool names_peer = r.output.find("rank 1") != std::string::npos || r.output.find("worker:1") != std::string::npos;
  EXPECT_TRUE(names_peer) << r.output;
  EXPECT_NE(r.output.find("all-reduce of 4194304 bytes"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Transports, BenchFailureTest,
                         ::testing::Values(Case{"tcp", SIGKILL}, Case{"tcp", SIGSTOP}, Case{"ring", SIGKILL},
                                           Case{"ring", SIGSTOP}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.backend + (info.param.signal == SIGKILL ? "_Killed" : "_Stopped");
                         });

}  // namespace
}  // namespace ringtrain::testing
