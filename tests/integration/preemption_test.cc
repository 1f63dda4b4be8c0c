// Preemption without loss, end to end with the real binary: SIGTERM to the chief, to a
// worker, to every task at once, and to `ringtrain launch`, mid-epoch with save_freq
// "epoch". The signalled tasks stop at one step boundary after the chief's backup of that
// step and exit 7; an unsignalled one waits in place for them; restarted, the run resumes
// at exactly that step and saves the uninterrupted run's model bytes.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "process.h"
#include "test_jobs.h"
#include "worker_cluster.h"

namespace ringtrain::testing {
namespace {

constexpr int kPreempted = 7;  // common/exit_codes.h kExitPreempted

// RecoveryJob (8 epochs of 30 steps of a few ms) backed up only at epoch ends.
nlohmann::json EpochBackupJob(const std::string& dir) {
  auto job = RecoveryJob(dir, 1);
  job["backup_and_restore"]["save_freq"] = "epoch";
  return job;
}

// The step in "preempted at step N" in `output`, -1 if none.
int64_t PreemptedStep(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex(R"(preempted at step (\d+) \(epoch \d+, step \d+/30\))"))) return -1;
  return std::stoll(m[1].str());
}

// Waits until the job's training is a little past its first backup (epoch 1's end), so
// that the signal usually lands mid-epoch, between two backup points (where it lands
// changes nothing the test asserts: the restart must resume at whatever step it was).
void WaitForTraining(Process& chief) {
  ASSERT_TRUE(chief.WaitForOutput("Epoch 1/8", 120)) << "training did not finish epoch 1";
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
}

// Says where the stop landed, for the log.
void Note(int64_t step) {
  std::printf("stopped at step %lld (epoch %lld, step %lld/30)\n", static_cast<long long>(step),
              static_cast<long long>(step / 30 + (step % 30 ? 1 : 0)), static_cast<long long>((step - 1) % 30 + 1));
}

// The saved model of an uninterrupted 2-worker run (computed once).
const std::string& Reference() {
  static const std::string model = [] {
    TempDir tmp;
    WriteFile(tmp.path() + "/job.json", EpochBackupJob(tmp.path()).dump());
    WorkerCluster c(tmp.path() + "/job.json", 2);
    for (int i = 0; i < 2; ++i) {
      ProcessResult r = c[i].Wait(180);
      EXPECT_EQ(r.exit_code, 0) << r.output;
    }
    return ReadFileOrEmpty(tmp.path() + "/model.safetensors");
  }();
  return model;
}

void ExpectResumedAt(const std::string& dir, const std::string& chief_output, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "ckpt-%012lld.json", static_cast<long long>(step));
  EXPECT_NE(chief_output.find("restored the backup " + dir + "/backup/" + name), std::string::npos)
      << "the restart did not resume at step " << step << ":\n" << chief_output;
}

// SIGTERM to the tasks in `signalled`; each exits 7 at one agreed step, the others wait
// in place; restarted, the job ends with the uninterrupted run's model.
void PreemptTasks(const std::vector<int>& signalled) {
  const std::string& reference = Reference();
  ASSERT_FALSE(reference.empty());
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", EpochBackupJob(tmp.path()).dump());
  WorkerCluster c(tmp.path() + "/job.json", 2);
  WaitForTraining(c[0]);
  for (int i : signalled) c[i].Kill(SIGTERM);
  int64_t step = -1;
  for (int i : signalled) {
    ProcessResult r = c[i].Wait(60);
    EXPECT_EQ(r.exit_code, kPreempted) << "task " << i << ":\n" << r.output;
    const int64_t s = PreemptedStep(r.output);
    EXPECT_GE(s, 30) << r.output;
    EXPECT_LT(s, 240) << r.output;
    if (step < 0) step = s;
    EXPECT_EQ(s, step) << "the tasks stopped at different steps";
    EXPECT_NE(r.output.find("restart to resume"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("ringtrain worker:" + std::to_string(i) + ": error:"), std::string::npos)
        << "a preemption is not an error:\n" << r.output;
    if (i == 0) {
      EXPECT_NE(r.output.find("backup written in "), std::string::npos) << r.output;
    }
  }
  ASSERT_GT(step, 0);
  Note(step);
  // The chief wrote the backup of the preempted step, even with save_freq "epoch". When
  // only a worker was signalled, the chief is still running and its background writer
  // may finish the file after the worker has exited: wait for it, with a deadline.
  char name[64];
  std::snprintf(name, sizeof(name), "/backup/ckpt-%012lld.json", static_cast<long long>(step));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(tmp.path() + name) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(std::filesystem::exists(tmp.path() + name)) << name;
  for (int i : signalled) c.Start(i);
  std::string chief_output;
  for (int i = 0; i < c.size(); ++i) {
    ProcessResult r = c[i].Wait(180);
    EXPECT_EQ(r.exit_code, 0) << "task " << i << ":\n" << r.output;
    if (i == 0) chief_output = r.output;
  }
  const bool chief_restarted = std::find(signalled.begin(), signalled.end(), 0) != signalled.end();
  if (chief_restarted) {
    ExpectResumedAt(tmp.path(), chief_output, step);
  } else {
    // The chief stayed: it saved the step, waited in place, and went on from it.
    EXPECT_NE(chief_output.find("stopped on a preemption request (SIGTERM) at step " + std::to_string(step)),
              std::string::npos)
        << chief_output;
    EXPECT_NE(chief_output.find("recovering in place from step " + std::to_string(step)),
              std::string::npos)
        << chief_output;
  }
  EXPECT_TRUE(ReadFileOrEmpty(tmp.path() + "/model.safetensors") == reference)
      << "the preempted run's model differs from the uninterrupted run's";
}

TEST(PreemptionTest, SigtermToTheChief) { PreemptTasks({0}); }
TEST(PreemptionTest, SigtermToAWorker) { PreemptTasks({1}); }
TEST(PreemptionTest, SigtermToEveryTaskAtOnce) { PreemptTasks({0, 1}); }

// `ringtrain launch` forwards SIGTERM: every worker stops at one step and exits 7, and so
// does launch; launched again, it resumes there and saves the uninterrupted run's model.
TEST(PreemptionTest, SigtermToLaunch) {
  const std::string& reference = Reference();
  ASSERT_FALSE(reference.empty());
  TempDir tmp;
  WriteFile(tmp.path() + "/job.json", EpochBackupJob(tmp.path()).dump());
  const std::map<std::string, std::string> env = {{"RINGTRAIN_PROGRESS", "lines"}, {"RINGTRAIN_NUM_THREADS", "1"}};
  const std::vector<std::string> args = {"launch", "--workers", "2", "--output", "all", "--job", tmp.path() + "/job.json"};
  int64_t step = -1;
  {
    Process launch(RingtrainBinary(), args, env);
    ASSERT_TRUE(launch.WaitForOutput("[worker:0] Epoch 1/8", 120)) << launch.Wait(1).output;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    launch.Kill(SIGTERM);
    ProcessResult r = launch.Wait(60);
    EXPECT_EQ(r.exit_code, kPreempted) << r.output;
    step = PreemptedStep(r.output);
    ASSERT_GE(step, 30) << r.output;
    Note(step);
    EXPECT_NE(r.output.find("[worker:0] ringtrain worker:0: preempted at step " + std::to_string(step)),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("[worker:1] ringtrain worker:1: preempted at step " + std::to_string(step)),
              std::string::npos)
        << r.output;
  }
  Process again(RingtrainBinary(), args, env);
  ProcessResult r = again.Wait(180);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ExpectResumedAt(tmp.path(), r.output, step);
  EXPECT_TRUE(ReadFileOrEmpty(tmp.path() + "/model.safetensors") == reference)
      << "the preempted run's model differs from the uninterrupted run's";
}

}  // namespace
}  // namespace ringtrain::testing
