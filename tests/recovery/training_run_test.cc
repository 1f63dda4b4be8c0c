// The recovery loop (recovery::TrainingRun) without processes: a scripted session and
// one-rank communicators that fail on cue. A recovered run must end with the model
// bytes of the uninterrupted one; every way out must carry the documented exit code.
#include "recovery/training_run.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/exit_policy.h"
#include "recovery/scripted_session.h"
#include "testing/small_conv_job.h"
#include "testing/temp_dir.h"

namespace ringtrain::recovery {
namespace {

// `extra`: fields to add, as JSON text beginning with a comma.
config::JobConfig Job(const std::string& extra = "") {
  nlohmann::json j = testing::SmallConvJob(160);
  if (!extra.empty()) j.update(nlohmann::json::parse("{" + extra.substr(1) + "}"));
  return testing::ParseTestJob(j);
}

std::unique_ptr<train::Trainer> NewTrainer(const config::JobConfig& job) {
  train::TrainerOptions o;
  o.out = std::tmpfile();  // left to the process's exit: the trainer prints until destroyed
  auto t = train::Trainer::Create(job, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

RunOptions Options(const config::JobConfig& job, config::RecoveryMode mode = config::RecoveryMode::kInPlace) {
  RunOptions o;
  o.mode = mode;
  o.backup = job.backup;
  o.comm.timeout = std::chrono::seconds(30);
  return o;
}

struct Outcome {
  RunResult result;
  uint64_t fingerprint = 0;
  int64_t step = 0;
};

Outcome RunJob(const config::JobConfig& job, ScriptedSession* session, RunOptions options) {
  auto trainer = NewTrainer(job);
  TrainingRun run(trainer.get(), session, std::move(options));
  Outcome out;
  out.result = run.Train();
  run.Finish(true);
  out.fingerprint = trainer->WeightsFingerprint();
  out.step = trainer->global_step();
  return out;
}

// 160 examples / 16 = 10 steps an epoch, one gradient all-reduce each (one pack), and
// the metrics' all-reduce at each epoch end: the 15th all-reduce is step 4 of epoch 2.
constexpr int kMidEpochTwo = 15;

uint64_t Uninterrupted(const config::JobConfig& job) {
  ScriptedSession clean({});
  Outcome out = RunJob(job, &clean, Options(job));
  EXPECT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  return out.fingerprint;
}

TEST(TrainingRunTest, ACleanRunEndsWhereThePlainTrainerEnds) {
  const config::JobConfig job = Job();
  auto plain = NewTrainer(job);
  ScriptedSession session({});
  auto comm = session.CreateCommunicator({}, 0);
  ASSERT_TRUE(comm.ok());
  ASSERT_TRUE(plain->Prepare(comm->get()).ok());
  ASSERT_TRUE(plain->SyncState(comm->get()).ok());
  ASSERT_TRUE(plain->Fit(comm->get()).ok());

  ScriptedSession clean({});
  Outcome out = RunJob(job, &clean, Options(job));
  ASSERT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(out.result.recoveries, 0);
  EXPECT_EQ(out.step, 30);
  EXPECT_EQ(out.fingerprint, plain->WeightsFingerprint());
  EXPECT_EQ(clean.last_generations, std::vector<int64_t>{-1});
  EXPECT_EQ(clean.detaches, 1);
}

TEST(TrainingRunTest, APeerFailureMidEpochIsRecoveredInPlaceWithTheSameBits) {
  const config::JobConfig job = Job();
  GenerationScript fail;
  fail.fail_all_reduce = kMidEpochTwo;
  fail.failure = "worker:1 missed its heartbeats for 10000 ms";
  ScriptedSession session({fail});
  Outcome out = RunJob(job, &session, Options(job));
  ASSERT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(out.result.recoveries, 1);
  EXPECT_EQ(out.step, 30);
  EXPECT_EQ(out.fingerprint, Uninterrupted(job));
  // It met again after generation 0, saying why it left.
  ASSERT_EQ(session.last_generations, (std::vector<int64_t>{-1, 0}));
  EXPECT_NE(session.reasons[1].find("missed its heartbeats"), std::string::npos) << session.reasons[1];
  EXPECT_NE(session.reasons[1].find("connection to rank 1"), std::string::npos) << session.reasons[1];
  EXPECT_EQ(session.detaches, 2);
}

TEST(TrainingRunTest, TwoFailuresInARowAreBothRecovered) {
  const config::JobConfig job = Job();
  GenerationScript first, second;
  first.fail_all_reduce = kMidEpochTwo;
  second.fail_all_reduce = 3;  // early in the next generation, before any new backup point
  ScriptedSession session({first, second});
  Outcome out = RunJob(job, &session, Options(job));
  ASSERT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(out.result.recoveries, 2);
  EXPECT_EQ(out.fingerprint, Uninterrupted(job));
}

// The hooks the metrics use: every generation formed, every recovery with its cause;
// watching changes nothing.
TEST(TrainingRunTest, HooksSeeEveryGenerationAndRecovery) {
  const config::JobConfig job = Job();
  GenerationScript first, second;
  first.fail_all_reduce = kMidEpochTwo;
  second.fail_all_reduce = 3;
  ScriptedSession session({first, second});
  RunOptions options = Options(job);
  std::vector<int64_t> generations;
  std::vector<Status> recoveries;
  options.on_generation = [&](int64_t g) { generations.push_back(g); };
  options.on_recovery = [&](const Status& why) { recoveries.push_back(why); };
  Outcome out = RunJob(job, &session, std::move(options));
  ASSERT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(generations.size(), 3u);
  for (size_t i = 1; i < generations.size(); ++i) EXPECT_GT(generations[i], generations[i - 1]);
  ASSERT_EQ(recoveries.size(), 2u);
  for (const Status& why : recoveries) EXPECT_FALSE(why.ok());
  EXPECT_EQ(out.fingerprint, Uninterrupted(job));
}

TEST(TrainingRunTest, RestartModeExitsFiveInsteadOfRecovering) {
  const config::JobConfig job = Job();
  GenerationScript fail;
  fail.fail_all_reduce = kMidEpochTwo;
  fail.failure = "worker:1 missed its heartbeats for 10000 ms";
  ScriptedSession session({fail});
  Outcome out = RunJob(job, &session, Options(job, config::RecoveryMode::kRestart));
  ASSERT_FALSE(out.result.status.ok());
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitPeerFailure) << out.result.status.ToString();
  EXPECT_NE(out.result.status.message().find("recovery is \"restart\""), std::string::npos);
  EXPECT_NE(out.result.status.message().find("missed its heartbeats"), std::string::npos);
  EXPECT_EQ(out.result.recoveries, 0);
  EXPECT_EQ(session.last_generations.size(), 1u);
}

TEST(TrainingRunTest, AnEvictedTaskExitsFive) {
  const config::JobConfig job = Job();
  GenerationScript fail;
  fail.fail_all_reduce = 4;
  fail.fail_with = AbortedError("the coordination service declared worker:0 failed");
  fail.evicted = true;
  ScriptedSession session({fail});
  Outcome out = RunJob(job, &session, Options(job));
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitPeerFailure) << out.result.status.ToString();
  EXPECT_NE(out.result.status.message().find("declared this task failed"), std::string::npos);
  EXPECT_EQ(session.last_generations.size(), 1u);
}

TEST(TrainingRunTest, ARendezvousThatTimesOutExitsFourAndAnEvictionFive) {
  const config::JobConfig job = Job();
  GenerationScript timeout;
  timeout.rendezvous =
      DeadlineExceededError("worker:1 did not come within 300 s").About(Subject::kCluster);
  ScriptedSession late({timeout});
  Outcome out = RunJob(job, &late, Options(job));
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitRendezvous) << out.result.status.ToString();
  EXPECT_EQ(out.step, 0);

  GenerationScript evicted;
  evicted.rendezvous = AbortedError("this task was replaced by a newer incarnation").About(Subject::kPeers);
  ScriptedSession replaced({evicted});
  out = RunJob(job, &replaced, Options(job));
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitPeerFailure) << out.result.status.ToString();
}

TEST(TrainingRunTest, AnImpossibleRingExitsTwoAtOnce) {
  const config::JobConfig job = Job();
  GenerationScript nccl;
  nccl.create = UnimplementedError("this build of ringtrain was not built with NCCL; use RING or AUTO")
                    .About(Subject::kCluster);
  ScriptedSession session({nccl});
  Outcome out = RunJob(job, &session, Options(job));
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitBadConfig) << out.result.status.ToString();
  EXPECT_NE(out.result.status.message().find("forming the ring of generation 0"), std::string::npos);
  EXPECT_EQ(session.last_generations.size(), 1u);
}

TEST(TrainingRunTest, ARingThatCouldNotFormIsTriedAgainInTheNextGeneration) {
  const config::JobConfig job = Job();
  GenerationScript slow;
  slow.create = DeadlineExceededError("waiting for rank 1 to join the communicator").About(Subject::kCluster);
  ScriptedSession session({slow});
  Outcome out = RunJob(job, &session, Options(job));
  ASSERT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(out.result.recoveries, 1);
  EXPECT_EQ(out.fingerprint, Uninterrupted(job));
}

TEST(TrainingRunTest, AJobOthersFinishedEndsAtOnce) {
  const config::JobConfig job = Job();
  GenerationScript finished;
  finished.job_finished = true;
  ScriptedSession session({finished});
  Outcome out = RunJob(job, &session, Options(job));
  EXPECT_TRUE(out.result.status.ok()) << out.result.status.ToString();
  EXPECT_EQ(out.step, 0);
}

TEST(TrainingRunTest, ABackupDirectoryThatCannotBeWrittenExitsSixWithoutRecovering) {
  testing::TempDir tmp;
  // A regular file where the backup directory must be: nothing can be loaded or written
  // there, which the run finds before training (a write failure would surface only at a
  // later backup point, as the writer works in the background).
  std::ofstream(tmp.path() + "/backups") << "x";
  const config::JobConfig job = Job(R"(, "backup_and_restore": {"backup_dir": ")" + tmp.path() + R"(/backups"})");
  ScriptedSession session({});
  Outcome out = RunJob(job, &session, Options(job));
  ASSERT_FALSE(out.result.status.ok());
  EXPECT_EQ(ExitCodeFor(out.result.status), kExitCheckpoint) << out.result.status.ToString();
  EXPECT_EQ(out.result.status.message().find('\n'), std::string::npos) << out.result.status.message();
  EXPECT_NE(out.result.status.message().find("/backups"), std::string::npos) << out.result.status.message();
  EXPECT_EQ(out.step, 0);
  EXPECT_EQ(session.last_generations.size(), 1u);
}

TEST(TrainingRunTest, BackupsOnDiskAreLoadedAndTheRunResumesWithTheSameBits) {
  testing::TempDir tmp;
  const std::string backups = tmp.path() + "/backups";
  const config::JobConfig job =
      Job(R"(, "backup_and_restore": {"backup_dir": ")" + backups + R"(", "delete_checkpoint": false})");
  // The first process dies (restart mode: it exits) in epoch 2 after backing up epoch 1.
  GenerationScript fail;
  fail.fail_all_reduce = kMidEpochTwo;
  ScriptedSession first({fail});
  Outcome killed = RunJob(job, &first, Options(job, config::RecoveryMode::kRestart));
  ASSERT_EQ(ExitCodeFor(killed.result.status), kExitPeerFailure) << killed.result.status.ToString();
  ASSERT_TRUE(std::filesystem::exists(backups + "/ckpt-000000000010.json"));
  // Its replacement starts from that backup and ends where an uninterrupted run does.
  ScriptedSession second({});
  Outcome resumed = RunJob(job, &second, Options(job));
  ASSERT_TRUE(resumed.result.status.ok()) << resumed.result.status.ToString();
  EXPECT_EQ(resumed.fingerprint, Uninterrupted(Job()));
}

}  // namespace
}  // namespace ringtrain::recovery
