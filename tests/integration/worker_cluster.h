// Worker processes on loopback that a multi-process test supervises: fast failure
// detection (200 ms heartbeats, a 2 s timeout), one compute thread, plain progress lines.
#pragma once

#include <signal.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {

// The environment of worker `index` of a loopback cluster on `ports`.
inline std::map<std::string, std::string> LoopbackWorkerEnv(const std::vector<int>& ports, int index) {
  auto env = FastFailureEnv();
  env["TF_CONFIG"] = LoopbackTfConfig(ports, index);
  env["RINGTRAIN_COLLECTIVE_TIMEOUT_S"] = "60";
  env["RINGTRAIN_PROGRESS"] = "lines";
  return env;
}

// `ringtrain worker --job JOB` for each of n tasks, started at once.
class WorkerCluster {
 public:
  // `env`: variables set on top of LoopbackWorkerEnv's.
  WorkerCluster(const std::string& job_path, int n, std::map<std::string, std::string> env = {})
      : job_(job_path), ports_(FreePorts(n)), procs_(n), env_(std::move(env)) {
    for (int i = 0; i < n; ++i) Start(i);
  }
  // (Re)starts task i with the same TF_CONFIG.
  void Start(int i) {
    auto env = LoopbackWorkerEnv(ports_, i);
    for (const auto& [k, v] : env_) env[k] = v;
    procs_[i] = std::make_unique<Process>(RingtrainBinary(), std::vector<std::string>{"worker", "--job", job_}, env);
  }
  Process& operator[](int i) { return *procs_[i]; }
  int size() const { return static_cast<int>(procs_.size()); }
  // Kills task i and keeps what it printed.
  void Kill(int i, int sig = SIGKILL) {
    procs_[i]->Kill(sig);
    if (sig == SIGKILL) dead_output_ += procs_[i]->Wait(30).output;
  }
  // Waits for every process; returns their results (task order).
  std::vector<ProcessResult> WaitAll(double timeout_s) {
    std::vector<ProcessResult> out;
    for (auto& p : procs_) out.push_back(p->Wait(timeout_s));
    return out;
  }
  // What the SIGKILLed tasks printed.
  const std::string& dead_output() const { return dead_output_; }

 private:
  std::string job_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<Process>> procs_;
  std::map<std::string, std::string> env_;
  std::string dead_output_;
};

}  // namespace ringtrain::testing
