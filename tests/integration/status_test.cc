// `ringtrain status` against real worker processes on loopback: both tasks running with
// their steps and the job's progress; a worker slowed by RINGTRAIN_FAULT_COMPUTE_DELAY_MS
// named a straggler (status JSON and one WARNING line on the chief), a healthy run
// naming nobody; an unreachable chief is one line and exit 4.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "process.h"
#include "test_jobs.h"
#include "testing/temp_dir.h"

namespace ringtrain::testing {
namespace {

using nlohmann::json;

std::map<std::string, std::string> Env(const std::vector<int>& ports, int index) {
  return {{"TF_CONFIG", LoopbackTfConfig(ports, index)},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "200"},
          {"RINGTRAIN_COLLECTIVE_TIMEOUT_S", "60"},
          {"RINGTRAIN_PROGRESS", "lines"},
          {"RINGTRAIN_NUM_THREADS", "1"}};
}

// `ringtrain status --json` against the chief at `port`: the parsed JSON, or null when it
// failed (the chief not up yet, or gone).
json Status(int port) {
  Process p(RingtrainBinary(), std::vector<std::string>{"status", "--json", "--chief", "127.0.0.1:" + std::to_string(port)});
  ProcessResult r = p.Wait(30);
  if (r.exit_code != 0) return nullptr;
  return json::parse(r.output, nullptr, /*allow_exceptions=*/false);
}

// Asks until `done` holds for the answer; returns the last answer (null if none came).
json StatusUntil(int port, const std::function<bool(const json&)>& done, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  json last = nullptr;
  while (std::chrono::steady_clock::now() < deadline) {
    json j = Status(port);
    if (j.is_object()) {
      last = j;
      if (done(j)) return j;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

bool BothRunning(const json& j) {
  if (j["tasks"].size() != 2) return false;
  for (const json& t : j["tasks"]) {
    if (t["state"] != "running" || !t["step"].is_number() || t["step"].get<int64_t>() <= 0) return false;
  }
  return true;
}

struct Workers {
  TempDir dir;
  std::vector<int> ports = FreePorts(2);
  std::vector<std::unique_ptr<Process>> workers;

  // `common_env` goes to both workers, `worker1_env` to worker:1 only.
  Workers(int epochs, const std::map<std::string, std::string>& common_env,
          const std::map<std::string, std::string>& worker1_env) {
    json job = RecoveryJob(dir.path(), 10);
    job["epochs"] = epochs;
    WriteFile(dir.path() + "/job.json", job.dump());
    for (int i = 0; i < 2; ++i) {
      auto env = Env(ports, i);
      for (const auto& [k, v] : common_env) env[k] = v;
      if (i == 1) env.insert(worker1_env.begin(), worker1_env.end());
      workers.push_back(std::make_unique<Process>(
          RingtrainBinary(), std::vector<std::string>{"worker", "--job", dir.path() + "/job.json"}, env));
    }
  }
  // Both finished; returns the chief's output.
  std::string Finish() {
    ProcessResult chief = workers[0]->Wait(120), other = workers[1]->Wait(120);
    EXPECT_EQ(chief.exit_code, 0) << chief.output;
    EXPECT_EQ(other.exit_code, 0) << other.output;
    return chief.output;
  }
};

TEST(StatusTest, HealthyRunShowsBothTasksRunningAndNamesNobody) {
  // Both ranks equally slowed (this job's steps take a few milliseconds; the run must
  // outlast a few `ringtrain status` processes on a loaded machine): equal ranks are
  // not stragglers, however slow.
  Workers run(/*epochs=*/8, {{"RINGTRAIN_FAULT_COMPUTE_DELAY_MS", "30"}}, {});
  json j = StatusUntil(run.ports[0], [](const json& s) {
    return BothRunning(s) && s["job"]["global_step"].is_number() && s["job"]["global_step"].get<int64_t>() >= 40;
  }, 90);
  ASSERT_TRUE(j.is_object()) << "no answer from `ringtrain status`";
  ASSERT_TRUE(BothRunning(j)) << j.dump(2);
  EXPECT_EQ(j["tasks"][0]["task"], "worker:0");
  EXPECT_EQ(j["tasks"][1]["task"], "worker:1");
  EXPECT_EQ(j["tasks"][1]["host"], "127.0.0.1:" + std::to_string(run.ports[1]));
  EXPECT_TRUE(j["tasks"][1]["incarnation"].is_string());
  EXPECT_EQ(j["tasks"][1]["generation"], 0);
  EXPECT_GE(j["tasks"][1]["heartbeat_age_s"].get<double>(), 0);
  EXPECT_GT(j["tasks"][1]["compute_s"].get<double>(), 0);
  const json& job = j["job"];
  EXPECT_EQ(job["epochs"], 8);
  EXPECT_EQ(job["steps_per_epoch"], 30);
  EXPECT_EQ(job["total_steps"], 240);
  EXPECT_GE(job["epoch"].get<int>(), 1);
  EXPECT_GT(job["images_per_sec"].get<double>(), 0);
  EXPECT_TRUE(job["eta_s"].is_number());
  EXPECT_TRUE(job["loss"].is_number());
  EXPECT_TRUE(job["last_backup_step"].is_number()) << j.dump(2);  // backups every 10 steps
  EXPECT_EQ(job["generation"], 0);
  EXPECT_EQ(j["stragglers"], json::array()) << j.dump(2);

  // The table names both tasks too.
  Process table(RingtrainBinary(), std::vector<std::string>{"status", "--chief", "127.0.0.1:" + std::to_string(run.ports[0])});
  ProcessResult t = table.Wait(30);
  if (t.exit_code == 0) {  // the run may just have finished
    EXPECT_NE(t.output.find("job: epoch "), std::string::npos) << t.output;
    EXPECT_NE(t.output.find("worker:1"), std::string::npos) << t.output;
  }

  const std::string chief = run.Finish();
  EXPECT_EQ(Count(chief, "straggler"), 0u) << chief;
}

// worker:1's straggler score as its own /metrics says it (0 when unreadable).
double StragglerScore(int metrics_port) {
  httplib::Client cli("127.0.0.1", metrics_port);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(5);
  auto r = cli.Get("/metrics");
  if (!r || r->status != 200) return 0;
  const std::string key = "ringtrain_straggler_score{task=\"worker:1\"} ";
  const size_t at = r->body.find(key);
  return at == std::string::npos ? 0 : std::atof(r->body.c_str() + at + key.size());
}

TEST(StatusTest, SlowedWorkerIsNamedAStraggler) {
  const int metrics_port = FreePorts(1)[0];
  Workers run(/*epochs=*/2, {},
              {{"RINGTRAIN_FAULT_COMPUTE_DELAY_MS", "60"}, {"RINGTRAIN_METRICS_PORT", std::to_string(metrics_port)}});
  json j = StatusUntil(run.ports[0], [](const json& s) { return !s["stragglers"].empty(); }, 90);
  ASSERT_TRUE(j.is_object()) << "no answer from `ringtrain status`";
  ASSERT_EQ(j["stragglers"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["stragglers"][0]["task"], "worker:1");
  EXPECT_GE(j["stragglers"][0]["steps"].get<int>(), 10);
  EXPECT_GT(j["stragglers"][0]["compute_s"].get<double>(), 0.06);
  EXPECT_EQ(j["tasks"][1]["straggler"], true);
  EXPECT_EQ(j["tasks"][0]["straggler"], false);
  bool event = false;
  for (const json& e : j["events"]) event |= e["kind"] == "straggler" && e["task"] == "worker:1";
  EXPECT_TRUE(event) << j.dump(2);
  // The chief's judgement reaches the slow task's own metrics with its heartbeats.
  double score = 0;
  for (int i = 0; i < 50 && score <= 1.2; ++i) {
    score = StragglerScore(metrics_port);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GT(score, 1.2);

  const std::string chief = run.Finish();
  EXPECT_EQ(Count(chief, "straggler: worker:1 computes "), 1u) << chief;
  EXPECT_EQ(Count(chief, "straggler: worker:0"), 0u) << chief;

  // Neither the reports nor the injected delay change a bit of the model.
  Workers plain(/*epochs=*/2, {}, {});
  plain.Finish();
  const std::string slowed_model = ReadFileOrEmpty(run.dir.path() + "/model.safetensors");
  EXPECT_FALSE(slowed_model.empty());
  EXPECT_TRUE(slowed_model == ReadFileOrEmpty(plain.dir.path() + "/model.safetensors"));
}

TEST(StatusTest, UnreachableChiefIsOneLineAndExit4) {
  const int port = FreePorts(1)[0];
  Process p(RingtrainBinary(), std::vector<std::string>{"status", "--chief", "127.0.0.1:" + std::to_string(port), "--timeout_s", "3"});
  ProcessResult r = p.Wait(30);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_EQ(Lines(r.output).size(), 1u) << r.output;
  EXPECT_NE(r.output.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
