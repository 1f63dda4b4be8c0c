// Training through a file system that fails mid-run (FaultInjectionEnv): a backup that
// hits a full disk, an fsync EIO, a failed rename or a crash between its two files; a
// history file, model checkpoint or TensorBoard file that cannot be written. Fit stops
// with one line about storage (exit code 6, never recovered from in place), and a fresh
// trainer on the default Env restores the newest good backup, as the recovery loop
// does, and ends with the uninterrupted run's weights, bit for bit.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "backup/backup.h"
#include "common/exit_policy.h"
#include "env/file_util.h"
#include "store/store.h"
#include "testing/fault_injection_env.h"
#include "testing/small_conv_job.h"
#include "testing/temp_dir.h"
#include "train/trainer.h"

namespace ringtrain::train {
namespace {

using ::ringtrain::testing::FaultInjectionEnv;
using ::ringtrain::testing::TempDir;

constexpr int kSaveFreq = 4;  // 250 / 16 = 15 steps per epoch: backups mid-epoch and across epoch ends

// Backups every kSaveFreq steps, and the other outputs under `dir`.
config::JobConfig Job(const std::string& dir) {
  nlohmann::json j = testing::SmallConvJob(250);
  j["backup_and_restore"] = {{"backup_dir", dir + "/backup"}, {"save_freq", kSaveFreq}};
  j["history_file"] = dir + "/history.jsonl";
  j["model_checkpoint"] = {{"filepath", dir + "/ckpt/epoch_{epoch}.safetensors"}};
  j["tensorboard_dir"] = dir + "/logs";
  return testing::ParseTestJob(j);
}


std::unique_ptr<Trainer> NewTrainer(const config::JobConfig& job, env::Env* env) {
  TrainerOptions o;
  o.out = std::tmpfile();  // left to the process's exit: the trainer prints until destroyed
  o.env = env;
  auto t = Trainer::Create(job, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

// Trains `t` to the end from where it is, writing every backup through `writer` and
// waiting for it (so that a failure surfaces at its own backup point); `after_backup`
// runs after each backup is on disk.
Status FitWithBackups(Trainer* t, collective::Communicator* comm, backup::BackupWriter* writer,
                      const std::function<void(int64_t step)>& after_backup = nullptr) {
  return t->Fit(comm, [&](const backup::TrainState& s) {
    RT_RETURN_IF_ERROR(writer->Submit(s));
    RT_RETURN_IF_ERROR(writer->Flush(Deadline::AfterSeconds(60)));
    if (after_backup) after_backup(s.global_step);
    return Status::Ok();
  });
}

uint64_t UninterruptedFingerprint() {
  TempDir tmp;
  auto t = NewTrainer(Job(tmp.path()), env::Default());
  auto comm = ringtrain::testing::LocalCommunicator();
  EXPECT_TRUE(t->Prepare(comm.get()).ok());
  EXPECT_TRUE(t->SyncState(comm.get()).ok());
  backup::BackupWriter writer(tmp.path() + "/backup", t->Identity());
  Status st = FitWithBackups(t.get(), comm.get(), &writer);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return t->WeightsFingerprint();
}

struct Fault {
  std::string name;
  std::function<void(FaultInjectionEnv*)> arm;  // armed once the second backup (step 8) is on disk
  int err;                                      // the errno text the error carries
  std::string names;                            // what the error names (a setting or a path part)
  int64_t newest_good;                          // the backup the restarted trainer resumes from
};

class StorageFaultTest : public ::testing::TestWithParam<Fault> {};

TEST_P(StorageFaultTest, FitStopsWithOneStorageLineAndAFreshTrainerResumesToTheSameWeights) {
  const Fault& fault = GetParam();
  static const uint64_t reference = UninterruptedFingerprint();
  TempDir tmp;
  const config::JobConfig job = Job(tmp.path());
  const std::string backup_dir = tmp.path() + "/backup";

  FaultInjectionEnv env;
  Status failed;
  {
    auto t = NewTrainer(job, &env);
    auto comm = ringtrain::testing::LocalCommunicator();
    ASSERT_TRUE(t->Prepare(comm.get()).ok());
    ASSERT_TRUE(t->SyncState(comm.get()).ok());
    backup::BackupWriter writer(backup_dir, t->Identity(), &env);
    failed = FitWithBackups(t.get(), comm.get(), &writer, [&](int64_t step) {
      if (step == 2 * kSaveFreq) fault.arm(&env);
    });
  }
  ASSERT_FALSE(failed.ok()) << "the run went through the fault";
  EXPECT_GT(env.faults_injected(), 0);
  EXPECT_EQ(failed.subject(), Subject::kStorage) << failed.ToString();
  EXPECT_EQ(ExitCodeFor(failed), 6) << failed.ToString();
  EXPECT_FALSE(IsTransient(failed)) << "the recovery loop must not treat a disk as a peer failure";
  EXPECT_EQ(failed.message().find('\n'), std::string::npos) << "one line: " << failed.message();
  EXPECT_NE(failed.message().find(fault.names), std::string::npos) << failed.message();
  EXPECT_NE(failed.message().find(std::strerror(fault.err)), std::string::npos) << failed.message();

  // The restarted process: the default Env, the newest good backup, to the end.
  auto t = NewTrainer(job, env::Default());
  auto comm = ringtrain::testing::LocalCommunicator();
  ASSERT_TRUE(t->Prepare(comm.get()).ok());
  std::vector<std::string> warnings;
  auto loaded = backup::LoadNewestBackup(backup_dir, t->Identity(), &warnings);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ((*loaded)->state.global_step, fault.newest_good);
  ASSERT_TRUE(t->Restore((*loaded)->state).ok());
  ASSERT_TRUE(t->SyncState(comm.get()).ok());
  backup::BackupWriter writer(backup_dir, t->Identity());
  Status st = FitWithBackups(t.get(), comm.get(), &writer);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(t->WeightsFingerprint(), reference) << "resumed from step " << fault.newest_good;

  // The next writer cleaned up the debris: only the newest two backups are left.
  auto names = env::Default()->GetChildren(backup_dir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"ckpt-000000000040.json", "ckpt-000000000040.safetensors",
                                              "ckpt-000000000044.json", "ckpt-000000000044.safetensors"}));
  // The history holds every epoch once, as in an uninterrupted run.
  auto history = env::Default()->ReadFile(tmp.path() + "/history.jsonl");
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(std::count(history->begin(), history->end(), '\n'), 3) << *history;
}

// The second backup is at step 8; the fault strikes at the next file it targets.
INSTANTIATE_TEST_SUITE_P(
    Faults, StorageFaultTest,
    ::testing::Values(
        Fault{"BackupOnAFullDisk", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*/backup/*"); }, ENOSPC,
              "backup_and_restore.backup_dir", 8},
        Fault{"BackupFsyncEio", [](FaultInjectionEnv* e) { e->FailSyncsMatching("*/backup/*"); }, EIO,
              "backup_and_restore.backup_dir", 8},
        Fault{"BackupRenameFails", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*/backup/*", EIO); }, EIO,
              "backup_and_restore.backup_dir", 8},
        Fault{"CrashBetweenBackupWeightsAndCommitRecord",
              [](FaultInjectionEnv* e) {
                e->CrashAfterFiles(1, /*drop_unsynced_data=*/true, "*/backup/*.safetensors");
              },
              EIO, "backup_and_restore.backup_dir", 8},
        // Epoch 1 ends at step 15, after the backup of step 12.
        Fault{"HistoryFileOnAFullDisk", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*/history.jsonl*"); },
              ENOSPC, "history_file", 12},
        Fault{"ReadOnlyHistoryFile", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*/history.jsonl", EROFS); },
              EROFS, "history_file", 12},
        Fault{"ModelCheckpointOnAFullDisk", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*/ckpt/*"); }, ENOSPC,
              "model_checkpoint", 12},
        Fault{"TensorBoardOnAFullDisk", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*/logs/*"); }, ENOSPC,
              "tensorboard_dir", 12}),
    [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

}  // namespace
}  // namespace ringtrain::train
