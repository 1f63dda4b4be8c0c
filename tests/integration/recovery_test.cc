// Fault tolerance end to end, with real worker processes on loopback and this test as
// their supervisor: a task SIGKILLed at a random step (chief or not, often while the
// chief is writing a backup) is restarted at once, the cluster recovers in place, and
// the saved model is byte-identical to an uninterrupted run's. Also: recovery
// "restart", a hung (SIGSTOPped) worker, a corrupted newest backup, a backup of
// another configuration.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <thread>

#include "process.h"
#include "test_jobs.h"
#include "worker_cluster.h"

namespace ringtrain::testing {
namespace {

// The newest backup's step in `dir`, -1 if none.
int64_t NewestBackupStep(const std::string& dir) {
  int64_t newest = -1;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() == 22 && name.rfind("ckpt-", 0) == 0 && name.substr(17) == ".json") {
      newest = std::max<int64_t>(newest, std::stoll(name.substr(5, 12)));
    }
  }
  return newest;
}

// Waits until the chief has backed up step `step` or later (false after timeout_s).
bool WaitForBackup(const std::string& dir, int64_t step, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (NewestBackupStep(dir) >= step) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

std::string AllOutput(const std::vector<ProcessResult>& results) {
  std::string s;
  for (size_t i = 0; i < results.size(); ++i) s += "\n--- task " + std::to_string(i) + "\n" + results[i].output;
  return s;
}

void ExpectAllOk(const std::vector<ProcessResult>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_FALSE(results[i].timed_out) << "task " << i << AllOutput(results);
    EXPECT_EQ(results[i].exit_code, 0) << "task " << i << AllOutput(results);
  }
}

// The saved model of an uninterrupted run of `job` with n workers (cached per case).
std::string Reference(const nlohmann::json& job_template, int n) {
  static std::map<std::string, std::string> cache;
  std::string key = job_template.dump() + "/" + std::to_string(n);
  if (cache.count(key)) return cache[key];
  TempDir tmp;
  auto job = job_template;
  job["save_model"] = tmp.path() + "/model.safetensors";
  job["backup_and_restore"]["backup_dir"] = tmp.path() + "/backup";
  WriteFile(tmp.path() + "/job.json", job.dump());
  WorkerCluster c(tmp.path() + "/job.json", n);
  auto results = c.WaitAll(180);
  ExpectAllOk(results);
  std::string model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  EXPECT_FALSE(model.empty());
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/backup")) << "delete_checkpoint must delete the backups";
  return cache[key] = model;
}

// Kills `victim` at a random point of its training and restarts it at once.
void KillAndRestartAtRandomStep(int n, int victim, int save_freq, uint32_t seed) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), save_freq);
  const std::string reference = Reference(RecoveryJob("REF", save_freq), n);
  WriteFile(tmp.path() + "/job.json", job.dump());
  WorkerCluster c(tmp.path() + "/job.json", n);
  std::mt19937 rng(seed);
  // Of 240 steps (about a second): the last 90 leave the test time to kill the victim
  // before the job ends, even on a loaded machine (a kill after the others finished
  // leaves a restarted chief waiting for workers that are done).
  const int64_t kill_after = std::uniform_int_distribution<int>(5, 150)(rng);
  ASSERT_TRUE(WaitForBackup(tmp.path() + "/backup", kill_after, 120)) << "no backup of step " << kill_after;
  c.Kill(victim);
  c.Start(victim);
  auto results = c.WaitAll(180);
  ExpectAllOk(results);
  std::string all = AllOutput(results) + c.dead_output();
  EXPECT_NE(all.find("recovering in place"), std::string::npos) << all;
  if (std::getenv("RECOVERY_TEST_VERBOSE")) std::fputs(all.c_str(), stderr);
  EXPECT_EQ(ReadFileOrEmpty(tmp.path() + "/model.safetensors"), reference)
      << "the recovered run's model differs from the uninterrupted run's" << all;
}

TEST(RecoveryTest, TwoWorkersNonChiefKilled) { KillAndRestartAtRandomStep(2, 1, 1, 1); }
TEST(RecoveryTest, TwoWorkersChiefKilled) { KillAndRestartAtRandomStep(2, 0, 1, 2); }
TEST(RecoveryTest, ThreeWorkersNonChiefKilled) { KillAndRestartAtRandomStep(3, 2, 7, 3); }
TEST(RecoveryTest, ThreeWorkersChiefKilled) { KillAndRestartAtRandomStep(3, 0, 7, 4); }

// TensorFlow's behaviour: every task exits with code 5; restarted, they resume from
// the backup and end with the same model.
TEST(RecoveryTest, RestartModeExitsEveryTaskAndResumes) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), 5);
  job["recovery"] = "restart";
  job["model_checkpoint"] = {{"filepath", tmp.path() + "/ckpt/ckpt_{epoch:02d}.safetensors"}};
  const std::string reference = Reference(RecoveryJob("REF", 5), 2);
  WriteFile(tmp.path() + "/job.json", job.dump());
  WorkerCluster c(tmp.path() + "/job.json", 2);
  ASSERT_TRUE(WaitForBackup(tmp.path() + "/backup", 60, 120));
  c.Kill(1);
  ProcessResult chief = c[0].Wait(60);
  EXPECT_EQ(chief.exit_code, 5) << chief.output;
  EXPECT_NE(chief.output.find("recovery is \"restart\""), std::string::npos) << chief.output;
  c.Start(0);
  c.Start(1);
  auto results = c.WaitAll(180);
  ExpectAllOk(results);
  EXPECT_NE(results[0].output.find("restored the backup"), std::string::npos) << AllOutput(results);
  EXPECT_EQ(ReadFileOrEmpty(tmp.path() + "/model.safetensors"), reference);
  // ModelCheckpoint: one file per epoch, from the chief.
  for (int epoch = 1; epoch <= 8; ++epoch) {
    char name[64];
    std::snprintf(name, sizeof(name), "/ckpt/ckpt_%02d.safetensors", epoch);
    EXPECT_TRUE(std::filesystem::exists(tmp.path() + name)) << name;
  }
}

// Runs the job on 2 workers, stops task `victim` (SIGSTOP: it keeps its sockets open,
// so only heartbeats can tell) after the backup of step 60, calls `then(cluster)`, and
// expects every task to end well with the uninterrupted run's model. Returns the results.
std::vector<ProcessResult> StopMidRun(int victim, const std::function<void(WorkerCluster&)>& then) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), 5);
  const std::string reference = Reference(RecoveryJob("REF", 5), 2);
  WriteFile(tmp.path() + "/job.json", job.dump());
  WorkerCluster c(tmp.path() + "/job.json", 2);
  EXPECT_TRUE(WaitForBackup(tmp.path() + "/backup", 60, 120)) << "no backup of step 60";
  c.Kill(victim, SIGSTOP);
  then(c);
  auto results = c.WaitAll(180);
  ExpectAllOk(results);
  EXPECT_TRUE(ReadFileOrEmpty(tmp.path() + "/model.safetensors") == reference)
      << "the model differs from the uninterrupted run's";
  return results;
}

// Stops `victim`, expects `watcher` to report `report`, then replaces the victim.
void HangThenReplace(int victim, int watcher, const std::string& report) {
  StopMidRun(victim, [&](WorkerCluster& c) {
    EXPECT_TRUE(c[watcher].WaitForOutput(report, 30)) << "the hung task was not detected";
    c.Kill(victim);  // SIGKILL works on a stopped process
    c.Start(victim);
  });
}

// The chief names the hung worker.
TEST(RecoveryTest, HungWorkerIsDetectedAndReplaced) { HangThenReplace(1, 0, "no heartbeat from worker:1"); }
// The workers notice a hung chief within the same bound, wait for it, and go on with
// its replacement.
TEST(RecoveryTest, HungChiefIsNoticedAndReplaced) { HangThenReplace(0, 1, "lost contact with the chief"); }

// The chief stopped (SIGSTOP) for twice the heartbeat timeout, then resumed: its own
// silence does not count against the worker, whose heartbeats it could not read. Nobody
// is declared failed, nobody exits, and the job ends with the uninterrupted run's model.
TEST(RecoveryTest, StoppedThenResumedChiefKeepsTheHealthyWorker) {
  auto results = StopMidRun(0, [](WorkerCluster& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4500));  // the heartbeat timeout is 2000 ms
    c.Kill(0, SIGCONT);
  });
  EXPECT_EQ(results[0].output.find("declaring worker:1 failed"), std::string::npos) << results[0].output;
}

// Runs a job to the end keeping its backups; returns the backup directory.
std::string RunKeepingBackups(const std::string& dir, nlohmann::json job) {
  job["backup_and_restore"]["delete_checkpoint"] = false;
  WriteFile(dir + "/job.json", job.dump());
  WorkerCluster c(dir + "/job.json", 2);
  ExpectAllOk(c.WaitAll(180));
  return dir + "/backup";
}

TEST(RecoveryTest, CorruptedNewestBackupFallsBackToThePreviousOne) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), 30);
  std::string backup_dir = RunKeepingBackups(tmp.path(), job);
  // The newest backup is the end of training (step 240); damage one byte of its weights.
  std::string newest = backup_dir + "/ckpt-000000000240.safetensors";
  std::string bytes = ReadFileOrEmpty(newest);
  ASSERT_FALSE(bytes.empty()) << "no backup at the end of training";
  bytes[bytes.size() - 3] ^= 0x40;
  WriteFile(newest, bytes);
  // The backup before it: step 210, unless the writer skipped some under a slow disk (a
  // newer submission replaces one still waiting), so ask the directory.
  std::string previous;
  for (const auto& e : std::filesystem::directory_iterator(backup_dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() == 22 && name.substr(17) == ".json" && name != "ckpt-000000000240.json") {
      previous = name.substr(0, 17);
    }
  }
  ASSERT_FALSE(previous.empty()) << "only one backup was kept";
  // Resuming finds it corrupted, warns, takes the previous one, and ends where the first run did.
  std::string first_model = ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  std::filesystem::remove(tmp.path() + "/model.safetensors");
  WorkerCluster c(tmp.path() + "/job.json", 2);
  auto results = c.WaitAll(180);
  ExpectAllOk(results);
  std::string all = AllOutput(results);
  EXPECT_NE(all.find("corrupt"), std::string::npos) << all;
  EXPECT_NE(all.find("restored the backup " + backup_dir + "/" + previous + ".json"), std::string::npos) << all;
  EXPECT_EQ(ReadFileOrEmpty(tmp.path() + "/model.safetensors"), first_model);
}

TEST(RecoveryTest, BackupOfAnotherConfigurationIsRefused) {
  TempDir tmp;
  auto job = RecoveryJob(tmp.path(), 30);
  RunKeepingBackups(tmp.path(), job);
  job["optimizer"]["learning_rate"] = 0.02;
  job["backup_and_restore"]["delete_checkpoint"] = false;
  WriteFile(tmp.path() + "/job.json", job.dump());
  WorkerCluster c(tmp.path() + "/job.json", 2);
  auto results = c.WaitAll(120);
  for (const auto& r : results) {
    EXPECT_EQ(r.exit_code, 6) << AllOutput(results);
    EXPECT_NE(r.output.find("different"), std::string::npos) << AllOutput(results);
  }
  // Nothing was loaded or overwritten: the backups are still the first run's.
  EXPECT_TRUE(std::filesystem::exists(tmp.path() + "/backup/ckpt-000000000240.json"));
}

}  // namespace
}  // namespace ringtrain::testing
