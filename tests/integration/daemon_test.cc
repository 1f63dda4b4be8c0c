// `ringtrain serve` end to end: two daemons on loopback take jobs from
// `ringtrain submit` and run them one at a time, each job with the model bytes `launch`
// gives it; cancel, a failing job, a worker daemon and the chief daemon SIGKILLed and
// restarted mid-job, strangers without the cluster secret, and SIGTERM.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

constexpr char kSecret[] = "daemon-test-secret-0123456789abcdef";

// A string field of job `id`'s record, "" if there is no such job or field.
std::string Field(const std::map<int64_t, nlohmann::json>& jobs, int64_t id, const char* key) {
  auto it = jobs.find(id);
  if (it == jobs.end() || !it->second.is_object() || !it->second.contains(key) || !it->second[key].is_string()) return "";
  return it->second[key].get<std::string>();
}


// Two daemons on loopback, each with its own work directory under `dir`.
class Daemons {
 public:
  // `start` false: the ports are chosen, the daemons not started (StartAll).
  explicit Daemons(std::string dir, int n = 2, bool start = true)
      : dir_(std::move(dir)), ports_(FreePorts(n)), procs_(n) {
    std::filesystem::create_directories(dir_);
    if (start) StartAll();
  }
  void StartAll() {
    for (size_t i = 0; i < procs_.size(); ++i) Start(static_cast<int>(i));
    WaitForChief();
  }
  // Until the chief daemon answers (it may take a moment to listen; the client waits for it).
  void WaitForChief() const {
    if (Client({"jobs", "--timeout_s", "20"}).exit_code == 0) return;
    ADD_FAILURE() << "the chief daemon never answered: " << Log(0);
  }
  ~Daemons() {
    for (auto& p : procs_) {
      if (p) p->Kill(SIGKILL);
    }
  }
  std::map<std::string, std::string> Env(int i) const {
    auto env = FastFailureEnv();
    env["TF_CONFIG"] = LoopbackTfConfig(ports_, i);
    env["RINGTRAIN_COLLECTIVE_TIMEOUT_S"] = "60";
    env["RINGTRAIN_PROGRESS"] = "lines";
    env["RINGTRAIN_CLUSTER_SECRET"] = kSecret;
    env["RINGTRAIN_PREEMPT_GRACE_S"] = "20";
    return env;
  }
  void Start(int i) {
    procs_[i] = std::make_unique<Process>(
        RingtrainBinary(),
        std::vector<std::string>{"serve", "--work_dir", WorkDir(i), "--log_file", dir_ + "/daemon" + std::to_string(i) + ".log"},
        Env(i));
  }
  void Kill(int i, int sig) { procs_[i]->Kill(sig); }
  ProcessResult Wait(int i, double timeout_s) { return procs_[i]->Wait(timeout_s); }
  std::string WorkDir(int i) const { return dir_ + "/work" + std::to_string(i); }
  std::string Chief() const { return "127.0.0.1:" + std::to_string(ports_[0]); }
  // The chief daemon's copy of job `id`'s files.
  std::string JobDir(int64_t id) const { return WorkDir(0) + "/jobs/job-" + std::to_string(id); }

  // A client command against the chief daemon; `secret` empty: none.
  ProcessResult Client(std::vector<std::string> args, const std::string& secret = kSecret) const {
    args.push_back("--chief");
    args.push_back(Chief());
    std::map<std::string, std::string> env = {{"RINGTRAIN_CLUSTER_SECRET", secret}};
    Process p(RingtrainBinary(), args, env);
    return p.Wait(60);
  }
  int64_t Submit(const std::string& job_path) const {
    ProcessResult r = Client({"submit", job_path});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const std::string& line : Lines(r.output)) {  // stdout's id, among stderr's line
      if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) return std::atoll(line.c_str());
    }
    ADD_FAILURE() << "submit printed no id: " << r.output;
    return -1;
  }
  // The chief daemon's records by id.
  std::map<int64_t, nlohmann::json> Jobs() const {
    ProcessResult r = Client({"jobs", "--json"});
    std::map<int64_t, nlohmann::json> out;
    // stdout's JSON line; stderr (interleaved) may carry the library's own lines.
    const size_t at = r.output.find("{\"jobs\"");
    const size_t end = at == std::string::npos ? at : r.output.find('\n', at);
    auto v = at == std::string::npos ? nlohmann::json() : nlohmann::json::parse(r.output.substr(at, end - at), nullptr, false);
    if (r.exit_code != 0 || !v.is_object()) {  // e.g. the chief daemon is being restarted
      last_error_ = "jobs --json: exit " + std::to_string(r.exit_code) + ": " + r.output;
      return out;
    }
    for (const auto& j : v["jobs"]) out[j["id"].get<int64_t>()] = j;
    return out;
  }
  // Waits until every job in `ids` is over; returns their records.
  std::map<int64_t, nlohmann::json> WaitDone(const std::vector<int64_t>& ids, double timeout_s) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    std::map<int64_t, nlohmann::json> jobs;
    while (std::chrono::steady_clock::now() < end) {
      jobs = Jobs();
      bool all = true;
      for (int64_t id : ids) {
        const std::string s = jobs.count(id) ? Field(jobs, id, "state") : "";
        all = all && (s == "finished" || s == "failed" || s == "cancelled");
      }
      if (all) return jobs;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    ADD_FAILURE() << "jobs not over after " << timeout_s << " s: " << nlohmann::json(jobs).dump() << "\n"
                  << last_error_ << "\n"
                  << ReadFileOrEmpty(dir_ + "/daemon0.log") << ReadFileOrEmpty(dir_ + "/daemon1.log");
    return jobs;
  }
  // Waits until job `id`'s chief output contains `text`.
  bool WaitForJobOutput(int64_t id, const std::string& text, double timeout_s) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (ReadFileOrEmpty(JobDir(id) + "/output.log").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // SIGTERM to every daemon: each must exit 0.
  void StopAll() {
    for (auto& p : procs_) p->Kill(SIGTERM);
    for (size_t i = 0; i < procs_.size(); ++i) {
      ProcessResult r = procs_[i]->Wait(60);
      EXPECT_EQ(r.exit_code, 0) << "daemon " << i << ": " << r.output << ReadFileOrEmpty(dir_ + "/daemon" + std::to_string(i) + ".log");
    }
  }
  std::string Log(int i) const { return ReadFileOrEmpty(dir_ + "/daemon" + std::to_string(i) + ".log"); }

 private:
  std::string dir_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<Process>> procs_;
  mutable std::string last_error_;  // of the last Jobs() that got no list
};

// A short job (ShortBitsJob with `seed`), as submitted (relative outputs) and as launched.
std::string SubmittedJob(const std::string& dir, const std::string& name, nlohmann::json job) {
  std::filesystem::create_directories(dir);
  job["save_model"] = "model.safetensors";
  if (job.contains("backup_and_restore")) job["backup_and_restore"]["backup_dir"] = "backup";
  WriteFile(dir + "/" + name + ".json", job.dump());
  return dir + "/" + name + ".json";
}

// The model bytes `launch --workers 2` gives `job`.
std::string LaunchBytes(const std::string& dir, nlohmann::json job) {
  std::filesystem::create_directories(dir);
  job["save_model"] = dir + "/model.safetensors";
  if (job.contains("backup_and_restore")) job["backup_and_restore"]["backup_dir"] = dir + "/backup";
  WriteFile(dir + "/job.json", job.dump());
  Process p(RingtrainBinary(), {"launch", "--workers", "2", "--job", dir + "/job.json"}, FastFailureEnv());
  ProcessResult r = p.Wait(240);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return ReadFileOrEmpty(dir + "/model.safetensors");
}

nlohmann::json Short(int seed) {
  auto job = ShortBitsJob("/unused");
  job["seed"] = seed;
  return job;
}

// A job long enough to be interrupted, with a backup every 5 steps.
nlohmann::json Long(int epochs) {
  auto job = RecoveryJob("/unused", 5);
  job["epochs"] = epochs;
  job["steps_per_epoch"] = 10;
  job["batch_size_per_worker"] = 16;
  return job;
}

class DaemonTest : public ::testing::Test {
 protected:
  TempDir tmp_;
};

TEST_F(DaemonTest, ThreeJobsCompleteInOrderWithLaunchsBytes) {
  Daemons d(tmp_.path() + "/d");
  std::vector<int64_t> ids;
  for (int k = 0; k < 3; ++k) ids.push_back(d.Submit(SubmittedJob(tmp_.path(), "job" + std::to_string(k), Short(10 + k))));
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3}));
  auto jobs = d.WaitDone(ids, 240);
  for (int k = 0; k < 3; ++k) {
    const int64_t id = ids[k];
    ASSERT_TRUE(jobs.count(id));
    ASSERT_EQ(Field(jobs, id, "state"), "finished") << jobs[id].dump();
    EXPECT_EQ(jobs[id]["attempts"], 1);
    EXPECT_TRUE(jobs[id]["final_metrics"].contains("loss")) << jobs[id].dump();
    EXPECT_TRUE(jobs[id]["final_metrics"].contains("val_accuracy")) << jobs[id].dump();
    if (k > 0) {
      EXPECT_GE(jobs[id]["started_s"].get<double>(), jobs[ids[k - 1]]["ended_s"].get<double>());
    }
    const std::string model = ReadFileOrEmpty(d.JobDir(id) + "/model.safetensors");
    ASSERT_FALSE(model.empty());
    EXPECT_EQ(model, LaunchBytes(tmp_.path() + "/launch" + std::to_string(k), Short(10 + k))) << "job-" << id;
  }
  ProcessResult logs = d.Client({"logs", "2"});
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_NE(logs.output.find("Epoch 2/2"), std::string::npos) << logs.output;
  ProcessResult table = d.Client({"jobs"});
  EXPECT_NE(table.output.find("finished"), std::string::npos) << table.output;
  d.StopAll();
}

TEST_F(DaemonTest, CancelAQueuedAndARunningJob) {
  Daemons d(tmp_.path() + "/d");
  const int64_t running = d.Submit(SubmittedJob(tmp_.path(), "long", Long(200)));
  const int64_t queued = d.Submit(SubmittedJob(tmp_.path(), "queued", Short(3)));
  ProcessResult c1 = d.Client({"cancel", std::to_string(queued)});
  EXPECT_EQ(c1.exit_code, 0) << c1.output;
  EXPECT_NE(c1.output.find("cancelled"), std::string::npos) << c1.output;
  ASSERT_TRUE(d.WaitForJobOutput(running, "Epoch 2/200", 120)) << d.Log(0);
  ProcessResult c2 = d.Client({"cancel", "job-" + std::to_string(running)});
  EXPECT_EQ(c2.exit_code, 0) << c2.output;
  auto jobs = d.WaitDone({running, queued}, 120);
  EXPECT_EQ(Field(jobs, running, "state"), "cancelled");
  EXPECT_EQ(Field(jobs, queued, "state"), "cancelled");
  EXPECT_EQ(jobs[queued]["attempts"], 0);
  // Cancelling what is over is refused; the daemons take the next job.
  ProcessResult again = d.Client({"cancel", std::to_string(queued)});
  EXPECT_EQ(again.exit_code, 2) << again.output;
  ProcessResult unknown = d.Client({"cancel", "99"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  const int64_t next = d.Submit(SubmittedJob(tmp_.path(), "next", Short(4)));
  auto after = d.WaitDone({next}, 120);
  EXPECT_EQ(Field(after, next, "state"), "finished") << after[next].dump();
  d.StopAll();
}

TEST_F(DaemonTest, AFailingJobFailsAloneAndTheNextRuns) {
  Daemons d(tmp_.path() + "/d");
  auto bad = Short(5);
  bad["data"]["train"] = {{"format", "mnist_idx"}, {"images", tmp_.path() + "/missing-images.idx"},
                          {"labels", tmp_.path() + "/missing-labels.idx"}};
  const int64_t failing = d.Submit(SubmittedJob(tmp_.path(), "bad", bad));
  const int64_t good = d.Submit(SubmittedJob(tmp_.path(), "good", Short(6)));
  auto jobs = d.WaitDone({failing, good}, 180);
  EXPECT_EQ(Field(jobs, failing, "state"), "failed");
  const std::string error = Field(jobs, failing, "error");
  EXPECT_NE(error.find("code 3"), std::string::npos) << error;
  EXPECT_NE(error.find("missing-images.idx"), std::string::npos) << error;
  ASSERT_EQ(Field(jobs, good, "state"), "finished") << jobs[good].dump();
  EXPECT_EQ(ReadFileOrEmpty(d.JobDir(good) + "/model.safetensors"), LaunchBytes(tmp_.path() + "/launch", Short(6)));
  ProcessResult follow = d.Client({"logs", "-f", std::to_string(failing)});
  EXPECT_EQ(follow.exit_code, 1) << follow.output;
  d.StopAll();
}

TEST_F(DaemonTest, AWorkerDaemonKilledMidJobRejoinsAndTheBytesAreKept) {
  Daemons d(tmp_.path() + "/d");
  const int64_t id = d.Submit(SubmittedJob(tmp_.path(), "long", Long(12)));
  ASSERT_TRUE(d.WaitForJobOutput(id, "Epoch 4/12", 120)) << d.Log(0);
  d.Kill(1, SIGKILL);
  d.Wait(1, 30);
  d.Start(1);
  auto jobs = d.WaitDone({id}, 240);
  ASSERT_EQ(Field(jobs, id, "state"), "finished") << jobs[id].dump();
  EXPECT_EQ(ReadFileOrEmpty(d.JobDir(id) + "/model.safetensors"), LaunchBytes(tmp_.path() + "/launch", Long(12)));
  d.StopAll();
}

TEST_F(DaemonTest, TheChiefDaemonKilledMidQueueLosesNothingAndRunsNothingTwice) {
  Daemons d(tmp_.path() + "/d");
  std::vector<int64_t> ids;
  ids.push_back(d.Submit(SubmittedJob(tmp_.path(), "a", Short(7))));
  ids.push_back(d.Submit(SubmittedJob(tmp_.path(), "b", Long(12))));
  ids.push_back(d.Submit(SubmittedJob(tmp_.path(), "c", Short(8))));
  ASSERT_TRUE(d.WaitForJobOutput(ids[1], "Epoch 4/12", 180)) << d.Log(0);
  d.Kill(0, SIGKILL);
  d.Wait(0, 30);
  d.Start(0);
  d.WaitForChief();
  auto jobs = d.WaitDone(ids, 300);
  const std::vector<nlohmann::json> launched = {Short(7), Long(12), Short(8)};
  for (size_t k = 0; k < ids.size(); ++k) {
    ASSERT_EQ(Field(jobs, ids[k], "state"), "finished") << jobs[ids[k]].dump() << d.Log(0);
    EXPECT_EQ(ReadFileOrEmpty(d.JobDir(ids[k]) + "/model.safetensors"),
              LaunchBytes(tmp_.path() + "/launch" + std::to_string(k), launched[k]))
        << "job-" << ids[k];
  }
  // Started once each, but the job that was running when the chief daemon died (resumed).
  EXPECT_EQ(jobs[ids[0]]["attempts"], 1);
  EXPECT_EQ(jobs[ids[1]]["attempts"], 2);
  EXPECT_EQ(jobs[ids[2]]["attempts"], 1);
  d.StopAll();
}

TEST_F(DaemonTest, SigtermEndsEveryDaemonAndTheJobResumesWhenTheyReturn) {
  Daemons d(tmp_.path() + "/d");
  const int64_t id = d.Submit(SubmittedJob(tmp_.path(), "long", Long(12)));
  ASSERT_TRUE(d.WaitForJobOutput(id, "Epoch 3/12", 120)) << d.Log(0);
  d.StopAll();
  EXPECT_NE(d.Log(0).find("left"), std::string::npos) << d.Log(0);
  d.Start(0);
  d.Start(1);
  auto jobs = d.WaitDone({id}, 240);
  ASSERT_EQ(Field(jobs, id, "state"), "finished") << jobs[id].dump();
  EXPECT_EQ(ReadFileOrEmpty(d.JobDir(id) + "/model.safetensors"), LaunchBytes(tmp_.path() + "/launch", Long(12)));
  d.StopAll();
}

TEST_F(DaemonTest, ASubmitRightAfterServeWaitsForTheDaemonWithinItsTimeout) {
  Daemons d(tmp_.path() + "/d", 2, /*start=*/false);
  const std::string job = SubmittedJob(tmp_.path(), "job", Short(9));
  // Nothing listens yet: the call waits out its deadline, then says so in one line, exit 4.
  const auto t0 = std::chrono::steady_clock::now();
  ProcessResult none = d.Client({"jobs", "--timeout_s", "1"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(none.exit_code, 4) << none.output;
  EXPECT_NE(none.output.find("cannot reach the chief's daemon"), std::string::npos) << none.output;
  EXPECT_NE(none.output.find("within 1 s"), std::string::npos) << none.output;
  // A submit started before the daemons is answered once they listen.
  std::vector<std::string> args = {"submit", job, "--timeout_s", "60", "--chief", d.Chief()};
  Process submit(RingtrainBinary(), args, {{"RINGTRAIN_CLUSTER_SECRET", kSecret}});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  d.StartAll();
  ProcessResult r = submit.Wait(90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(d.Jobs().size(), 1u);
  d.StopAll();
}

TEST_F(DaemonTest, AStrangerWithoutTheSecretIsRefusedOnEveryCall) {
  Daemons d(tmp_.path() + "/d");
  const std::string job = SubmittedJob(tmp_.path(), "job", Short(9));
  for (const std::string& secret : std::vector<std::string>{"", "not-the-daemons-secret-0123456789"}) {
    for (const std::vector<std::string>& call : std::vector<std::vector<std::string>>{
             {"submit", job}, {"jobs"}, {"logs", "1"}, {"cancel", "1"}}) {
      ProcessResult r = d.Client(call, secret);
      EXPECT_EQ(r.exit_code, 2) << call[0] << ": " << r.output;
      EXPECT_NE(r.output.find("cluster secret"), std::string::npos) << call[0] << ": " << r.output;
    }
  }
  // Nothing was queued by them.
  EXPECT_TRUE(d.Jobs().empty());
  d.StopAll();
}

}  // namespace
}  // namespace ringtrain::testing
