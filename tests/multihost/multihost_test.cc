// Three workers on three "machines": each in a network namespace of its own, with its
// own address on a private /24 joined through a bridge (see net_hosts.h), each binding
// the address TF_CONFIG gives it. First the job trains to the end; then it trains again
// while one machine's link is taken down mid-run and brought back after the heartbeat
// timeout: the survivors detect the failure, the cut-off worker recovers in place or
// exits to be restarted by this test (acting as its supervisor, as Kubernetes or systemd
// would), and the job ends with the same model, bit for bit, as the uninterrupted run.
//
// Needs root; skipped with the reason where the machine does not allow namespaces.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "integration/process.h"
#include "integration/test_jobs.h"
#include "multihost/net_hosts.h"

namespace ringtrain::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kPort = 2222;         // each namespace has its own ports: the same one everywhere
constexpr int kHeartbeatTimeoutMs = 3000;
constexpr double kRunTimeoutS = 120;  // per run, bounding every wait on the workers
constexpr int kMaxRestarts = 2;       // per task, as a supervisor's restart limit

// The demo-like job both runs train. Many short epochs: an epoch line comes early, so
// the link can be cut with most of the training still ahead (each step takes a few ms).
nlohmann::json Job(const std::string& dir) {
  auto job = SmallSyntheticJob(dir);
  job["epochs"] = 100;
  job["steps_per_epoch"] = 12;
  job["backup_and_restore"] = {{"backup_dir", dir + "/backup"}, {"save_freq", 6}};
  job["recovery"] = "in_place";
  return job;
}

std::map<std::string, std::string> Env(const NetHosts& hosts, int index) {
  nlohmann::json cluster = {{"worker", nlohmann::json::array()}};
  std::string hosts_list;
  for (int i = 0; i < hosts.size(); ++i) {
    cluster["worker"].push_back(hosts.address(i) + ":" + std::to_string(kPort));
    if (i > 0) hosts_list += ",";
    hosts_list += hosts.address(i);
  }
  return {{"TF_CONFIG",
           nlohmann::json{{"cluster", cluster}, {"task", {{"type", "worker"}, {"index", index}}}}.dump()},
          {"RINGTRAIN_CLUSTER_SECRET", "multihost-test-secret-" + std::to_string(::getpid())},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "300"},
          {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", std::to_string(kHeartbeatTimeoutMs)},
          {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "60"},
          {"RINGTRAIN_PROGRESS", "lines"},
          {"RINGTRAIN_NUM_THREADS", "1"},
          // An http(s)_proxy in the test's environment must not capture the cluster's gRPC.
          {"no_grpc_proxy", hosts_list}};
}

// One worker per host, started with `ip netns exec`, and this test as their supervisor.
class Cluster {
 public:
  Cluster(const NetHosts* hosts, std::string job_path)
      : hosts_(hosts), job_(std::move(job_path)), procs_(hosts->size()), earlier_(hosts->size()),
        earlier_codes_(hosts->size()) {
    for (int i = 0; i < hosts->size(); ++i) Start(i);
  }
  void Start(int i) {
    // `ip netns exec` execs the worker in place: the child's pid is the worker's.
    std::vector<std::string> argv = hosts_->ExecPrefix(i);
    const std::string ip = argv.front();
    argv.erase(argv.begin());
    for (const std::string& a : {RingtrainBinary(), std::string("worker"), std::string("--job"), job_}) {
      argv.push_back(a);
    }
    procs_[i] = std::make_unique<Process>(ip, argv, Env(*hosts_, i));
  }
  Process& operator[](int i) { return *procs_[i]; }

  // Waits for every task (one thread each, so that a restarted task can rejoin the
  // others while they wait for it), restarting a task that exits non-zero up to
  // max_restarts times. Returns each task's last result.
  std::vector<ProcessResult> Supervise(double timeout_s, int max_restarts) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    std::vector<ProcessResult> results(procs_.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < procs_.size(); ++i) {
      threads.emplace_back([&, i] {
        while (true) {
          double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
          ProcessResult r = procs_[i]->Wait(std::max(1.0, left));
          if (r.exit_code == 0 || r.timed_out || restarts(static_cast<int>(i)) >= max_restarts) {
            results[i] = r;
            return;
          }
          earlier_[i] += r.output + "[exited with code " + std::to_string(r.exit_code) + "; restarted by the test]\n";
          earlier_codes_[i].push_back(r.exit_code);
          Start(static_cast<int>(i));
        }
      });
    }
    for (auto& t : threads) t.join();
    return results;
  }
  // What task i's earlier incarnations printed (empty if it was never restarted).
  const std::string& earlier_output(int i) const { return earlier_[i]; }
  // The exit codes of task i's earlier incarnations, one per restart.
  const std::vector<int>& earlier_exit_codes(int i) const { return earlier_codes_[i]; }
  int restarts(int i) const { return static_cast<int>(earlier_codes_[i].size()); }

 private:
  const NetHosts* hosts_;
  std::string job_;
  std::vector<std::unique_ptr<Process>> procs_;
  std::vector<std::string> earlier_;
  std::vector<std::vector<int>> earlier_codes_;
};

std::string AllOutput(const Cluster& c, const std::vector<ProcessResult>& results) {
  std::string s;
  for (size_t i = 0; i < results.size(); ++i) {
    s += "\n--- worker " + std::to_string(i) + " (exit " + std::to_string(results[i].exit_code) +
         (results[i].timed_out ? ", timed out" : "") + ")\n" + c.earlier_output(static_cast<int>(i)) +
         results[i].output;
  }
  return s;
}

// The hex after the last "final weights fingerprint: " in `output`, "" if none.
std::string Fingerprint(const std::string& output) {
  const std::string key = "final weights fingerprint: ";
  size_t at = output.rfind(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return output.substr(at, output.find_first_of(" \r\n", at) - at);
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Trained {
  std::string model;        // the saved model's bytes
  std::string fingerprint;  // of the final weights, as every worker logged it
};

class MultiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto hosts = NetHosts::Create(kWorkers);
    if (!hosts.ok() && hosts.status().code() == Code::kFailedPrecondition) {
      GTEST_SKIP() << "multi-host test skipped: " << hosts.status().message();
    }
    ASSERT_TRUE(hosts.ok()) << "setting up the network namespaces: " << hosts.status().ToString();
    hosts_ = std::move(*hosts);
    // Every host reaches every other over the bridge before any worker starts.
    for (int from = 0; from < kWorkers; ++from) {
      for (int to = 0; to < kWorkers; ++to) {
        if (from == to) continue;
        Status st = hosts_->CheckTcp(from, to, 10);
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
    }
  }

  // Run 1: the job trains to the end on the three hosts. The result of the last passing
  // run is kept for the process, for the interrupted run to compare with.
  Trained Uninterrupted(bool reuse) {
    static Trained* cached = nullptr;
    if (reuse && cached) return *cached;
    TempDir tmp;
    WriteFile(tmp.path() + "/job.json", Job(tmp.path()).dump());
    auto start = std::chrono::steady_clock::now();
    Cluster c(hosts_.get(), tmp.path() + "/job.json");
    const bool training = c[0].WaitForOutput("Epoch 1/", 60);
    EXPECT_TRUE(training) << "the chief never finished its first epoch";
    if (training) ExpectStatusFromAnotherHost();
    auto results = c.Supervise(kRunTimeoutS, 0);
    std::fprintf(stderr, "[multihost] uninterrupted run: %.1f s\n", SecondsSince(start));
    Trained t;
    t.model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
    t.fingerprint = Fingerprint(results[0].output);
    const std::string all = AllOutput(c, results);
    for (int i = 0; i < kWorkers; ++i) {
      EXPECT_FALSE(results[i].timed_out) << "worker " << i << all;
      EXPECT_EQ(results[i].exit_code, 0) << "worker " << i << all;
      EXPECT_EQ(Fingerprint(results[i].output), t.fingerprint) << "worker " << i << all;
      // Each bound its own address: the data plane listens on the host's address.
      EXPECT_NE(results[i].output.find("listening on " + hosts_->address(i) + ":"), std::string::npos)
          << "worker " << i << all;
    }
    EXPECT_NE(results[0].output.find("coordination service listening on " + hosts_->address(0) + ":" +
                                     std::to_string(kPort)),
              std::string::npos)
        << all;
    EXPECT_FALSE(t.model.empty()) << "no saved model" << all;
    EXPECT_FALSE(t.fingerprint.empty()) << "no final weights fingerprint" << all;
    if (!::testing::Test::HasFailure()) {
      delete cached;
      cached = new Trained(t);
    }
    return t;
  }

  // `ringtrain status --json` run on host b against the chief on host a, while the job
  // trains: every task with its own host's address; without the cluster secret, refused.
  void ExpectStatusFromAnotherHost() {
    std::vector<std::string> argv = hosts_->ExecPrefix(1);
    const std::string ip = argv.front();
    argv.erase(argv.begin());
    for (const std::string& a : {RingtrainBinary(), std::string("status"), std::string("--json"), std::string("--chief"),
                                 hosts_->address(0) + ":" + std::to_string(kPort)}) {
      argv.push_back(a);
    }
    // The tasks' progress rides on their heartbeats (every 300 ms here): the epoch line
    // may come before the chief's first heartbeat with a step. Asked again until it has
    // one (the run has most of its epochs ahead).
    ProcessResult r;
    nlohmann::json j;
    for (int attempt = 0; attempt < 20; ++attempt) {
      r = Process(ip, argv, Env(*hosts_, 1)).Wait(30);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      j = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
      ASSERT_TRUE(j.is_object()) << r.output;
      if (j["tasks"].size() > 0 && j["tasks"][0]["state"] == "running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(j["tasks"].size(), static_cast<size_t>(kWorkers)) << r.output;
    for (int i = 0; i < kWorkers; ++i) {
      EXPECT_EQ(j["tasks"][i]["host"], hosts_->address(i) + ":" + std::to_string(kPort)) << r.output;
    }
    EXPECT_EQ(j["tasks"][0]["state"], "running") << r.output;
    std::fprintf(stderr, "[multihost] status from %s: %zu tasks, the chief at step %s\n", hosts_->ns(1).c_str(),
                 j["tasks"].size(), j["tasks"][0]["step"].dump().c_str());
    auto stranger = Env(*hosts_, 1);
    stranger.erase("RINGTRAIN_CLUSTER_SECRET");
    stranger["RINGTRAIN_ALLOW_INSECURE"] = "1";
    ProcessResult refused = Process(ip, argv, stranger).Wait(30);
    EXPECT_NE(refused.exit_code, 0) << refused.output;
  }

  std::unique_ptr<NetHosts> hosts_;
};

TEST_F(MultiHostTest, ThreeHostsTrainToTheEnd) {
  Trained t = Uninterrupted(/*reuse=*/false);
  EXPECT_FALSE(t.model.empty());
}

TEST_F(MultiHostTest, LinkCutMidRunIsDetectedAndTheJobRecovers) {
  const Trained reference = Uninterrupted(/*reuse=*/true);
  ASSERT_FALSE(::testing::Test::HasFailure()) << "the uninterrupted run failed";
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", Job(tmp.path()).dump());
  auto start = std::chrono::steady_clock::now();
  Cluster c(hosts_.get(), tmp.path() + "/job.json");
  // Worker 2 is training (it has finished an epoch): cut host c off, for longer than the
  // heartbeat timeout, then bring it back.
  ASSERT_TRUE(c[2].WaitForOutput("Epoch 1/", 60)) << "worker 2 never finished its first epoch";
  ASSERT_TRUE(hosts_->SetLink(2, false).ok());
  std::fprintf(stderr, "[multihost] link of %s down at %.1f s\n", hosts_->ns(2).c_str(), SecondsSince(start));
  std::this_thread::sleep_for(std::chrono::milliseconds(kHeartbeatTimeoutMs + 2000));
  ASSERT_TRUE(hosts_->SetLink(2, true).ok());
  std::fprintf(stderr, "[multihost] link back up at %.1f s\n", SecondsSince(start));
  auto results = c.Supervise(kRunTimeoutS, kMaxRestarts);
  std::fprintf(stderr, "[multihost] interrupted run: %.1f s; worker 2 restarted %d time(s)\n", SecondsSince(start),
               c.restarts(2));
  const std::string all = AllOutput(c, results);
  if (std::getenv("MULTIHOST_TEST_VERBOSE")) std::fputs(all.c_str(), stderr);

  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_FALSE(results[i].timed_out) << "worker " << i << all;
    EXPECT_EQ(results[i].exit_code, 0) << "worker " << i << all;
    EXPECT_EQ(Fingerprint(results[i].output), reference.fingerprint) << "worker " << i << all;
  }
  // Only the cut-off worker may have needed restarting; the survivors recovered in place.
  EXPECT_EQ(c.restarts(0), 0) << all;
  EXPECT_EQ(c.restarts(1), 0) << all;
  // The cut-off worker, declared failed, exits with "a peer failed" (5) to be restarted.
  for (int code : c.earlier_exit_codes(2)) EXPECT_EQ(code, 5) << all;
  // The failure was detected: the chief names the silent worker, and the survivors
  // roll back and wait for it.
  EXPECT_NE(results[0].output.find("no heartbeat from worker:2"), std::string::npos) << all;
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(results[i].output.find("recovering in place"), std::string::npos) << "worker " << i << all;
  }
  EXPECT_EQ(ReadFileOrEmpty(tmp.path() + "/model.safetensors"), reference.model)
      << "the recovered run's model differs from the uninterrupted run's" << all;
}

// Elastic across hosts: host `cut` loses its link for good mid-run. With min_workers 2 (a
// majority of 3) the two connected hosts go on: they host the cut-off task's rank (for
// the chief's host, the first surviving task takes over the coordination service at its
// own address), and the job ends with the uninterrupted run's model bytes. The cut-off
// task, alone below min_workers, hosts nothing; it is stopped at the end.
void CutOffForGood(NetHosts* hosts, int cut, const Trained& reference) {
  TempDir tmp;
  auto job = Job(tmp.path());
  job["elastic"] = {{"min_workers", 2}, {"wait_s", 0}};
  WriteFile(tmp.path() + "/job.json", job.dump());
  auto start = std::chrono::steady_clock::now();
  Cluster c(hosts, tmp.path() + "/job.json");
  ASSERT_TRUE(c[cut].WaitForOutput("Epoch 1/", 60)) << "worker " << cut << " never finished its first epoch";
  ASSERT_TRUE(hosts->SetLink(cut, false).ok());
  std::fprintf(stderr, "[multihost] link of %s down for good at %.1f s\n", hosts->ns(cut).c_str(), SecondsSince(start));
  std::vector<ProcessResult> results(kWorkers);
  std::string all;
  for (int i = 0; i < kWorkers; ++i) {
    if (i == cut) continue;
    results[i] = c[i].Wait(kRunTimeoutS);
    all += "\n--- worker " + std::to_string(i) + " (exit " + std::to_string(results[i].exit_code) + ")\n" +
           results[i].output;
  }
  c[cut].Kill(SIGKILL);
  all += "\n--- worker " + std::to_string(cut) + " (cut off, killed)\n" + c[cut].Wait(10).output;
  std::fprintf(stderr, "[multihost] elastic run without %s: %.1f s\n", hosts->ns(cut).c_str(), SecondsSince(start));
  if (std::getenv("MULTIHOST_TEST_VERBOSE")) std::fputs(all.c_str(), stderr);
  for (int i = 0; i < kWorkers; ++i) {
    if (i == cut) continue;
    EXPECT_FALSE(results[i].timed_out) << "worker " << i << all;
    EXPECT_EQ(results[i].exit_code, 0) << "worker " << i << all;
  }
  const int host = cut == 0 ? 1 : cut - 1;  // the nearest connected task before it (the first, for the chief)
  EXPECT_NE(results[host].output.find("hosting training task " + std::to_string(cut)), std::string::npos) << all;
  if (cut == 0) {
    EXPECT_NE(results[1].output.find("worker:1 takes it over at " + hosts->address(1)), std::string::npos) << all;
  }
  EXPECT_EQ(ReadFileOrEmpty(tmp.path() + "/model.safetensors"), reference.model)
      << "the elastic run's model differs from the uninterrupted run's" << all;
}

TEST_F(MultiHostTest, ElasticGoesOnWithoutAWorkersHostCutOffForGood) {
  const Trained reference = Uninterrupted(/*reuse=*/true);
  ASSERT_FALSE(::testing::Test::HasFailure()) << "the uninterrupted run failed";
  CutOffForGood(hosts_.get(), 2, reference);
}

TEST_F(MultiHostTest, ElasticGoesOnWithoutTheChiefsHostCutOffForGood) {
  const Trained reference = Uninterrupted(/*reuse=*/true);
  ASSERT_FALSE(::testing::Test::HasFailure()) << "the uninterrupted run failed";
  CutOffForGood(hosts_.get(), 0, reference);
}

}  // namespace
}  // namespace ringtrain::testing
