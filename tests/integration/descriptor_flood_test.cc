// Descriptor exhaustion is not fatal: the chief runs with RLIMIT_NOFILE 1024 (soft and
// hard, as `prlimit --nofile=1024` sets it: systemd's default soft limit, and no room to
// raise it) while a stranger opens 2,500 plain TCP connections to its coordination port
// and holds them until the job ends. Before: the chief could not open its next backup
// (EMFILE) and exited 6, and the job died. Now training finishes with the uninterrupted
// run's model bytes. Skipped without prlimit or when this test cannot hold the
// connections itself (its own hard limit).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "process.h"
#include "testing/sanitizers.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

constexpr int kHeld = 2500;
constexpr char kPrlimit[] = "/usr/bin/prlimit";

std::map<std::string, std::string> FloodEnv(const std::vector<int>& ports, int index) {
  return {{"TF_CONFIG", LoopbackTfConfig(ports, index)},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "60"},
          {"RINGTRAIN_PROGRESS", "lines"},
          {"RINGTRAIN_NUM_THREADS", "1"}};
}

// Runs the job on 2 workers, the chief under `prlimit --nofile=1024`; while the chief
// trains (after its first backup) `flood` is called. Returns both results.
std::vector<ProcessResult> RunJob(const std::string& dir, const std::function<void(int chief_port)>& flood) {
  auto job = RecoveryJob(dir, 30);
  WriteFile(dir + "/job.json", job.dump());
  const std::vector<int> ports = FreePorts(2);
  std::vector<std::string> chief_args = {"--nofile=1024:1024", RingtrainBinary(), "worker", "--job", dir + "/job.json"};
  Process chief(kPrlimit, chief_args, FloodEnv(ports, 0));
  Process worker(RingtrainBinary(), {"worker", "--job", dir + "/job.json"}, FloodEnv(ports, 1));
  if (flood) {
    EXPECT_TRUE(chief.WaitForOutput("Epoch 2/", 120)) << "training did not start";
    flood(ports[0]);
  }
  return {chief.Wait(180), worker.Wait(180)};
}

class DescriptorFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPrlimit, X_OK) != 0) GTEST_SKIP() << "no " << kPrlimit;
    // With every descriptor held, UBSan's vptr check cannot probe memory and reports falsely.
    if (kAddressSanitizer) GTEST_SKIP() << "needs free descriptors for the sanitizers' checks";
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < kHeld + 200) {
      GTEST_SKIP() << "this test's hard RLIMIT_NOFILE (" << lim.rlim_max << ") cannot hold " << kHeld
                   << " connections";
    }
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
};

TEST_F(DescriptorFloodTest, ChiefWithNofile1024SurvivesTwoThousandFiveHundredHeldConnections) {
  TempDir ref_dir;
  std::vector<ProcessResult> ref = RunJob(ref_dir.path(), nullptr);
  ASSERT_EQ(ref[0].exit_code, 0) << ref[0].output;
  ASSERT_EQ(ref[1].exit_code, 0) << ref[1].output;
  const std::string reference = ReadFileOrEmpty(ref_dir.path() + "/model.safetensors");
  ASSERT_FALSE(reference.empty());

  TempDir dir;
  std::vector<int> held;
  int refused = 0;
  std::vector<ProcessResult> r = RunJob(dir.path(), [&](int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < kHeld; ++i) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) break;
      // Non-blocking: a connection the chief never accepts waits in its backlog.
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
        ++refused;
        ::close(fd);
        continue;
      }
      held.push_back(fd);
    }
  });
  for (int fd : held) ::close(fd);
  EXPECT_GT(held.size(), 2000u) << refused << " connections refused";
  // The flood did take every descriptor the chief had (gRPC's accept failed for want of them).
  EXPECT_NE(r[0].output.find("Too many open files"), std::string::npos) << r[0].output;
  EXPECT_NE(r[0].output.find("open files: soft limit 1024, hard limit 1024"), std::string::npos) << r[0].output;
  EXPECT_EQ(r[0].exit_code, 0) << r[0].output;
  EXPECT_EQ(r[1].exit_code, 0) << r[1].output;
  EXPECT_TRUE(ReadFileOrEmpty(dir.path() + "/model.safetensors") == reference)
      << "the model differs from the uninterrupted run's";
}

}  // namespace
}  // namespace ringtrain::testing
