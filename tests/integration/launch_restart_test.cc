// `ringtrain launch --max_restarts K` as a supervisor, end to end through the binary:
// a worker killed by a signal is started again as the same task (same TF_CONFIG),
// a worker whose failure a restart cannot fix (bad config) is not, a task that keeps
// failing is given up after K restarts, and the launcher still stops when told to
// while it supervises restarts.
#include <gtest/gtest.h>

#include <filesystem>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "common/cpu_binding.h"
#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

// A job long enough to be interrupted (hundreds of short epochs).
std::string LongJob(const std::string& dir) {
  auto job = SmallSyntheticJob(dir);
  job["epochs"] = 2000;
  WriteFile(dir + "/job.json", job.dump());
  return dir + "/job.json";
}

const std::map<std::string, std::string> kEnv = FastFailureEnv();

// The direct children of `pid` (its main thread forks them all).
std::vector<pid_t> Children(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
  std::istringstream in(ReadFileOrEmpty(path));
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

// The TF_CONFIG in a process's environment ("" if none, or not yet exec'd).
std::string TfConfigOf(pid_t pid) {
  std::string env = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/environ");
  const std::string key = "TF_CONFIG=";
  for (size_t start = 0; start < env.size();) {
    size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    if (env.compare(start, key.size(), key) == 0) return env.substr(start + key.size(), end - start - key.size());
    start = end + 1;
  }
  return "";
}

int TaskIndex(const std::string& tf_config) {
  auto j = nlohmann::json::parse(tf_config, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("task") || !j["task"].contains("index")) return -1;
  return j["task"]["index"].is_number_integer() ? j["task"]["index"].get<int>() : -1;
}

struct Task {
  pid_t pid = -1;
  std::string tf_config;
};

// The launcher's child that runs task `index`, other than `not_pid`; waits up to
// timeout_s for it (a child between fork and exec has no TF_CONFIG yet).
Task FindTask(pid_t launcher, int index, pid_t not_pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    for (pid_t c : Children(launcher)) {
      if (c == not_pid) continue;
      std::string tf = TfConfigOf(c);
      if (!tf.empty() && TaskIndex(tf) == index) return {c, tf};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

TEST(LaunchRestartTest, KilledWorkerIsRestartedWithTheSameTfConfig) {
  TempDir tmp;
  std::string job = LongJob(tmp.path());
  Process launch(RingtrainBinary(),
                 {"launch", "--output", "all", "--workers", "2", "--max_restarts", "2", "--grace_s", "5", "--job", job}, kEnv);
  ASSERT_TRUE(launch.WaitForOutput("[worker:1] Epoch 2/2000", 60)) << launch.Wait(1).output;

  Task first = FindTask(launch.pid(), 1, -1, 10);
  ASSERT_GT(first.pid, 0) << "no child of the launcher runs worker 1";
  ASSERT_EQ(::kill(first.pid, SIGKILL), 0);
  bool restarted = launch.WaitForOutput("launch: worker:1 exited with code 137 (killed by signal 9); "
                                        "restarting it (restart 1 of 2)",
                                        20);
  Task second = restarted ? FindTask(launch.pid(), 1, first.pid, 10) : Task{};

  // Stopping the launcher stops everything, restarts or not: it must not hang.
  launch.Kill(SIGTERM);
  ProcessResult r = launch.Wait(30);
  EXPECT_FALSE(r.timed_out) << r.output;
  ASSERT_TRUE(restarted) << r.output;
  ASSERT_GT(second.pid, 0) << r.output;
  EXPECT_NE(second.pid, first.pid);
  EXPECT_EQ(second.tf_config, first.tf_config);
}

// The CPUs a process may run on, as the kernel lists them ("0-1", "3").
std::string CpusAllowed(pid_t pid) {
  std::istringstream in(ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status"));
  const std::string key = "Cpus_allowed_list:";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) {
      const size_t v = line.find_first_not_of(" \t", key.size());
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "";
}

// --bind_to core (the default): each worker on its own share of the CPUs launch may use,
// the same share after a restart; --bind_to none: every CPU launch may use.
TEST(LaunchRestartTest, EachWorkerRunsOnItsOwnCpusAcrossARestart) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  for (const std::string bind : {"core", "none"}) {
    SCOPED_TRACE("--bind_to " + bind);
    TempDir tmp;
    std::string job = LongJob(tmp.path());
    Process launch(RingtrainBinary(),
                   {"launch", "--output", "all", "--workers", "2", "--max_restarts", "1", "--grace_s", "5",
                    "--bind_to", bind, "--job", job},
                   kEnv);
    ASSERT_TRUE(launch.WaitForOutput("[worker:1] Epoch 2/2000", 60)) << launch.Wait(1).output;
    std::string want[2], got[2];
    for (int i = 0; i < 2; ++i) {
      const std::vector<int> share = bind == "core" ? CpuShare(allowed, 2, i) : std::vector<int>{};
      want[i] = DescribeCpus(share.empty() ? allowed : share);  // one CPU: nobody is bound
      Task t = FindTask(launch.pid(), i, -1, 10);
      got[i] = t.pid > 0 ? CpusAllowed(t.pid) : "no worker " + std::to_string(i);
      if (i == 1 && t.pid > 0 && bind == "core") {
        ASSERT_EQ(::kill(t.pid, SIGKILL), 0);
        const bool restarted = launch.WaitForOutput("restarting it (restart 1 of 1)", 20);
        Task again = restarted ? FindTask(launch.pid(), 1, t.pid, 10) : Task{};
        EXPECT_EQ(again.pid > 0 ? CpusAllowed(again.pid) : "not restarted", want[1]) << "after the restart";
      }
    }
    launch.Kill(SIGTERM);
    ProcessResult r = launch.Wait(30);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(got[0], want[0]) << r.output;
    EXPECT_EQ(got[1], want[1]) << r.output;
    if (bind == "core" && allowed.size() >= 2) {
      EXPECT_NE(r.output.find(", on CPUs " + want[0] + " | " + want[1]), std::string::npos) << r.output;
    }
  }
}

// The supervisor and recovery in place together: a killed worker is restarted, the
// cluster recovers, and launch exits 0 with the model an uninterrupted run writes.
TEST(LaunchRestartTest, JobCompletesAfterAWorkerIsKilled) {
  TempDir tmp;
  std::string models[2];
  for (int run = 0; run < 2; ++run) {
    const std::string dir = tmp.path() + "/run" + std::to_string(run);
    std::filesystem::create_directories(dir);
    WriteFile(dir + "/job.json", RecoveryJob(dir, 10).dump());
    Process launch(RingtrainBinary(),
                   {"launch", "--output", "all", "--workers", "2", "--max_restarts", "1", "--job", dir + "/job.json"}, kEnv);
    if (run == 1) {
      ASSERT_TRUE(launch.WaitForOutput("[worker:1] Epoch 2/8", 60)) << launch.Wait(1).output;
      Task victim = FindTask(launch.pid(), 1, -1, 10);
      ASSERT_GT(victim.pid, 0);
      ASSERT_EQ(::kill(victim.pid, SIGKILL), 0);
    }
    ProcessResult r = launch.Wait(120);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (run == 1) {
      EXPECT_NE(r.output.find("restarting it (restart 1 of 1)"), std::string::npos) << r.output;
    }
    models[run] = ReadFileOrEmpty(dir + "/model.safetensors");
  }
  EXPECT_FALSE(models[0].empty());
  EXPECT_EQ(models[0], models[1]);
}

// A socket listening on 127.0.0.1 at a port the kernel picks, held until destroyed.
class BusyPort {
 public:
  BusyPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd_, 4) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~BusyPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The chief cannot listen on its port (we hold it), so it exits 4 at once, every
// time: with --max_restarts 1 it is restarted once, its new output is echoed with
// the same prefix, then the launcher gives up with that code.
ProcessResult LaunchWithBusyChiefPort(int max_restarts) {
  TempDir tmp;
  std::string job = LongJob(tmp.path());
  BusyPort busy;
  EXPECT_GT(busy.port(), 0);
  auto env = kEnv;
  env["RINGTRAIN_RENDEZVOUS_TIMEOUT_S"] = "10";  // worker 1 outlives the chief's attempts
  Process launch(RingtrainBinary(),
                 {"launch", "--output", "all", "--workers", "2", "--base_port", std::to_string(busy.port()), "--max_restarts",
                  std::to_string(max_restarts), "--grace_s", "5", "--job", job},
                 env);
  return launch.Wait(30);
}


TEST(LaunchRestartTest, GivesUpAfterMaxRestarts) {
  ProcessResult r = LaunchWithBusyChiefPort(1);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 4) << r.output;
  size_t restart = r.output.find("launch: worker:0 exited with code 4; restarting it (restart 1 of 1)\n");
  ASSERT_NE(restart, std::string::npos) << r.output;
  EXPECT_EQ(Count(r.output, "restarting it"), 1u) << r.output;
  // The restarted chief's own lines, echoed like the first one's.
  EXPECT_NE(r.output.find("[worker:0] ringtrain worker:0: error: cannot listen", restart), std::string::npos)
      << r.output;
  EXPECT_EQ(Count(r.output, "[worker:0] ringtrain worker:0: error: cannot listen"), 2u) << r.output;
  EXPECT_NE(r.output.find("launch: worker:0 failed again after 1 restart(s); giving up (--max_restarts 1)\n",
                          restart),
            std::string::npos)
      << r.output;
}

// Without --max_restarts the first failure ends the cluster, as it always did.
TEST(LaunchRestartTest, NoRestartsByDefault) {
  ProcessResult r = LaunchWithBusyChiefPort(0);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("launch: worker:0 exited with code 4\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("giving up"), std::string::npos) << r.output;
}

// A bad job fails every worker with exit 2: restarting would fail the same way, so
// the launcher does not, and exits 2.
TEST(LaunchRestartTest, BadConfigIsNotRestarted) {
  TempDir tmp;
  auto job = SmallSyntheticJob(tmp.path());
  job["epoch"] = 3;  // unknown field
  WriteFile(tmp.path() + "/job.json", job.dump());
  Process launch(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--max_restarts", "2", "--grace_s", "5", "--job",
                                     tmp.path() + "/job.json"},
                 kEnv);
  ProcessResult r = launch.Wait(30);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("exited with code 2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("restarting"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
