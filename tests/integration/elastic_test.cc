// Elastic training (job field "elastic"), end to end through the binary: a task SIGKILLed
// mid-run and never restarted is hosted by a surviving process (its virtual rank: its
// shard, its streams, its place in every sum), and the job ends with the uninterrupted
// run's model bytes; the same for two of four tasks at once, and for a task that comes
// back mid-run and takes its rank back. Below min_workers the survivors wait and fail
// as without elastic, naming the missing task.
#include <gtest/gtest.h>

#include <signal.h>


#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "process.h"
#include "test_jobs.h"
#include "worker_cluster.h"

namespace ringtrain::testing {
namespace {

// RecoveryJob, long enough to be interrupted, elastic with the given floor.
std::string ElasticJob(const std::string& dir, int min_workers) {
  std::filesystem::create_directories(dir);
  auto job = RecoveryJob(dir, 10);
  job["epochs"] = 40;
  job["elastic"] = {{"min_workers", min_workers}, {"wait_s", 0}};
  WriteFile(dir + "/job.json", job.dump());
  return dir + "/job.json";
}

// The uninterrupted n-process run's model.
std::string Uninterrupted(const std::string& dir, int n, int min_workers) {
  const std::string job = ElasticJob(dir, min_workers);
  Process p(RingtrainBinary(), {"launch", "--workers", std::to_string(n), "--job", job},
            {{"RINGTRAIN_NUM_THREADS", "1"}, {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}});
  ProcessResult r = p.Wait(240);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return ReadFileOrEmpty(dir + "/model.safetensors");
}

// Kills `victims` once worker 0 has finished epoch 3; with `comes_back`, starts them again
// (same TF_CONFIG, new incarnation) once their rank is hosted elsewhere. Returns the
// model and checks every process that was not killed exited 0.
std::string Interrupted(const std::string& dir, int n, int min_workers, const std::vector<int>& victims,
                        bool comes_back, std::string* output) {
  const std::string job = ElasticJob(dir, min_workers);
  WorkerCluster cluster(job, n);
  EXPECT_TRUE(cluster[0].WaitForOutput("Epoch 3/40", 120)) << cluster[0].Wait(1).output;
  for (int v : victims) cluster.Kill(v);
  // The process hosting the lost ranks says so (worker:1, the nearest present task before them).
  const bool hosted = cluster[1].WaitForOutput("hosting training task " + std::to_string(victims.front()), 60);
  EXPECT_TRUE(hosted) << cluster[1].Wait(1).output;
  if (comes_back && hosted) {
    for (int v : victims) cluster.Start(v);
  }
  std::vector<ProcessResult> results = cluster.WaitAll(240);
  for (int i = 0; i < n; ++i) {
    *output += results[static_cast<size_t>(i)].output;
    const bool killed = std::find(victims.begin(), victims.end(), i) != victims.end();
    if (killed && !comes_back) continue;
    EXPECT_FALSE(results[static_cast<size_t>(i)].timed_out) << "worker " << i;
    EXPECT_EQ(results[static_cast<size_t>(i)].exit_code, 0) << "worker " << i << ":\n"
                                                            << results[static_cast<size_t>(i)].output;
  }
  return ReadFileOrEmpty(dir + "/model.safetensors");
}

TEST(ElasticTest, ALostWorkerIsHostedByASurvivorAndTheBytesAreKept) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  std::string output;
  const std::string got = Interrupted(tmp.path() + "/lost", 3, 2, {2}, /*comes_back=*/false, &output);
  ASSERT_FALSE(got.empty()) << output;
  EXPECT_TRUE(got == want) << "3 tasks, worker:2 lost for good: the model differs from the uninterrupted run's";
}

TEST(ElasticTest, TwoOfFourLostAtOnceAreHostedAndTheBytesAreKept) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 4, 2);
  ASSERT_FALSE(want.empty());
  std::string output;
  const std::string got = Interrupted(tmp.path() + "/lost", 4, 2, {2, 3}, /*comes_back=*/false, &output);
  ASSERT_FALSE(got.empty()) << output;
  EXPECT_NE(output.find("hosting training task 3"), std::string::npos) << output;
  EXPECT_TRUE(got == want) << "4 tasks, workers 2 and 3 lost: the model differs from the uninterrupted run's";
}

TEST(ElasticTest, ALostWorkerThatComesBackTakesItsRankBackAndTheBytesAreKept) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  std::string output;
  const std::string got = Interrupted(tmp.path() + "/back", 3, 2, {2}, /*comes_back=*/true, &output);
  ASSERT_FALSE(got.empty()) << output;
  EXPECT_NE(output.find("no longer hosting training task 2"), std::string::npos) << output;
  EXPECT_TRUE(got == want) << "worker:2 lost and back: the model differs from the uninterrupted run's";
}

// The chief lost for good: the first surviving task takes over the coordination service
// at its own TF_CONFIG address, the others find it, and the chief's task (its backups,
// history and model file) is hosted in that process.
TEST(ElasticTest, TheChiefLostForGoodIsSucceededAndTheBytesAreKept) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  std::string output;
  const std::string got = Interrupted(tmp.path() + "/lost", 3, 2, {0}, /*comes_back=*/false, &output);
  ASSERT_FALSE(got.empty()) << output;
  EXPECT_NE(output.find("worker:1 takes it over at 127.0.0.1:"), std::string::npos) << output;
  EXPECT_NE(output.find("worker:2: the coordination service continues at worker:1"), std::string::npos) << output;
  EXPECT_TRUE(got == want) << "the chief lost for good: the model differs from the uninterrupted run's";
}

// The former chief comes back: it joins the service at its successor, as a task like any
// other, and takes its rank back.
TEST(ElasticTest, AReturningFormerChiefJoinsItsSuccessorAndTheBytesAreKept) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  std::string output;
  const std::string got = Interrupted(tmp.path() + "/back", 3, 2, {0}, /*comes_back=*/true, &output);
  ASSERT_FALSE(got.empty()) << output;
  EXPECT_NE(output.find("worker:0 joins the coordination service at worker:1"), std::string::npos) << output;
  EXPECT_TRUE(got == want) << "the chief lost and back: the model differs from the uninterrupted run's";
}

// BackupAndRestore across an elastic run: worker:2 is lost and hosted, then every
// process is killed; all three started again resume from the backups the elastic run
// wrote (the chief's, every 10 steps) and end with the uninterrupted run's bytes.
TEST(ElasticTest, AFullRestartResumesFromTheElasticRunsBackups) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  const std::string job = ElasticJob(tmp.path() + "/run", 2);
  std::string output;
  {
    WorkerCluster cluster(job, 3);
    ASSERT_TRUE(cluster[0].WaitForOutput("Epoch 3/40", 120)) << cluster[0].Wait(1).output;
    cluster.Kill(2);
    ASSERT_TRUE(cluster[1].WaitForOutput("hosting training task 2", 60)) << cluster[1].Wait(1).output;
    ASSERT_TRUE(cluster[0].WaitForOutput("Epoch 8/40", 120)) << cluster[0].Wait(1).output;
    cluster.Kill(0);
    cluster.Kill(1);
  }
  WorkerCluster again(job, 3);
  std::vector<ProcessResult> results = again.WaitAll(240);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(results[static_cast<size_t>(i)].exit_code, 0) << results[static_cast<size_t>(i)].output;
  }
  EXPECT_NE(results[0].output.find("restored the backup "), std::string::npos) << results[0].output;
  EXPECT_TRUE(ReadFileOrEmpty(tmp.path() + "/run/model.safetensors") == want)
      << "the run resumed from the elastic run's backups saved other bytes";
}

// Under launch (no --max_restarts) a lost worker of an elastic job does not end the
// cluster: launch says so, the others host its task, and launch exits 0 with the bytes.
TEST(ElasticTest, LaunchGoesOnWithoutALostWorker) {
  TempDir tmp;
  const std::string want = Uninterrupted(tmp.path() + "/whole", 3, 2);
  ASSERT_FALSE(want.empty());
  const std::string job = ElasticJob(tmp.path() + "/run", 2);
  Process launch(RingtrainBinary(), {"launch", "--output", "all", "--workers", "3", "--job", job},
                 {{"RINGTRAIN_NUM_THREADS", "1"}, {"RINGTRAIN_HEARTBEAT_INTERVAL_MS", "200"},
                  {"RINGTRAIN_HEARTBEAT_TIMEOUT_MS", "2000"}});
  ASSERT_TRUE(launch.WaitForOutput("[worker:0] Epoch 3/40", 120)) << launch.Wait(1).output;
  const pid_t victim = FindLaunchedTask(launch.pid(), 2, 10);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ProcessResult r = launch.Wait(240);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("launch: worker:2 exited with code 137; the job is elastic: the others go on"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("hosting training task 2"), std::string::npos) << r.output;
  EXPECT_TRUE(ReadFileOrEmpty(tmp.path() + "/run/model.safetensors") == want) << r.output;
}

TEST(ElasticTest, BelowMinWorkersTheSurvivorsFailNamingTheMissingTask) {
  TempDir tmp;
  const std::string job = ElasticJob(tmp.path(), 3);
  WorkerCluster cluster(job, 3, {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "8"}});
  ASSERT_TRUE(cluster[0].WaitForOutput("Epoch 3/40", 120)) << cluster[0].Wait(1).output;
  cluster.Kill(2);
  std::vector<ProcessResult> results = cluster.WaitAll(120);
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(results[static_cast<size_t>(i)].timed_out);
    EXPECT_EQ(results[static_cast<size_t>(i)].exit_code, 4) << results[static_cast<size_t>(i)].output;
    EXPECT_NE(results[static_cast<size_t>(i)].output.find("worker:2"), std::string::npos);
    EXPECT_EQ(results[static_cast<size_t>(i)].output.find("hosting training task"), std::string::npos)
        << results[static_cast<size_t>(i)].output;
  }
}

TEST(ElasticTest, AnElasticJobThatCannotBeIsRefusedWithExit2) {
  TempDir tmp;
  struct Case {
    nlohmann::json elastic;
    std::string recovery;
    std::string says;
    std::string implementation = "AUTO";
  };
  const std::vector<Case> cases = {
      {{{"min_workers", 2}}, "restart", "'elastic' needs \"recovery\": \"in_place\""},
      {{{"min_workers", 0}}, "in_place", "elastic.min_workers"},
      {{{"wait_s", -1}}, "in_place", "'elastic.wait_s' must be a number of seconds"},
      {{{"min_wokers", 2}}, "in_place", "min_wokers"},
      {{{"min_workers", 5}}, "in_place", "elastic.min_workers is 5 but TF_CONFIG has 2 training tasks"},
      {{{"min_workers", 1}}, "in_place", "'elastic' needs the RING all-reduce", "NCCL"},
  };
  for (const Case& c : cases) {
    auto job = RecoveryJob(tmp.path(), 10);
    job["elastic"] = c.elastic;
    job["recovery"] = c.recovery;
    job["communication"] = {{"implementation", c.implementation}};
    WriteFile(tmp.path() + "/job.json", job.dump());
    Process p(RingtrainBinary(), {"worker", "--job", tmp.path() + "/job.json"},
              LoopbackWorkerEnv(FreePorts(2), 0));
    ProcessResult r = p.Wait(30);
    SCOPED_TRACE(c.elastic.dump());
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
