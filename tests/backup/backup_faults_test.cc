// Backups under disk faults (FaultInjectionEnv): ENOSPC while writing backup k's
// weights or its commit record, EIO on fsync, a failed rename, and a crash between
// backup k's weights file and its .json. In every case the error is one line, about
// storage (exit code 6), naming the directory; backup k-1 -- the newest good one -- is
// still what LoadNewestBackup returns; and the next writer cleans up the debris.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>

#include "backup/backup.h"
#include "backup_test_util.h"
#include "common/exit_policy.h"
#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::backup {
namespace {

namespace fs = std::filesystem;
using ::ringtrain::testing::FaultInjectionEnv;
using ::ringtrain::testing::TempDir;
using testing::ExpectSameState;
using testing::List;
using testing::MakeIdentity;
using testing::MakeState;


std::vector<std::string> Files(const std::vector<int64_t>& steps) {
  std::vector<std::string> names;
  for (int64_t s : steps) {
    names.push_back(BackupStem(s) + ".json");
    names.push_back(BackupStem(s) + ".safetensors");
  }
  std::sort(names.begin(), names.end());
  return names;
}

// One fault, armed before backup 30 is written.
struct Fault {
  std::string name;
  std::function<void(FaultInjectionEnv*)> arm;
  int err;                             // the errno text the error must carry
  std::vector<std::string> debris;     // what the failed write leaves besides backups 10 and 20
};

class BackupFaultTest : public ::testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    for (int64_t step : {10, 20}) ASSERT_TRUE(WriteBackup(dir_, id_, MakeState(id_, step)).ok());
  }
  // The newest good backup, read through the default Env (a new process).
  int64_t NewestGood() {
    std::vector<std::string> warnings;
    auto r = LoadNewestBackup(dir_, id_, &warnings);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    if (!r.ok() || !r->has_value()) return -1;
    ExpectSameState((*r)->state, MakeState(id_, (*r)->state.global_step));
    return (*r)->state.global_step;
  }
  void ExpectStorageErrorNamingTheDirectory(const Status& s) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.subject(), Subject::kStorage) << s.ToString();
    EXPECT_EQ(ExitCodeFor(s), 6) << s.ToString();
    EXPECT_FALSE(IsTransient(s)) << "a full or broken disk is not a peer failure: no recovery in place";
    EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::strerror(GetParam().err)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("backup_and_restore.backup_dir"), std::string::npos) << "what to do: " << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line";
  }

  TempDir tmp_;
  const std::string dir_ = tmp_.path() + "/backup";
  const BackupIdentity id_ = MakeIdentity();
};

TEST_P(BackupFaultTest, NewestGoodBackupSurvivesAndTheNextWriterCleansUp) {
  FaultInjectionEnv env;
  GetParam().arm(&env);
  Status s = WriteBackup(dir_, id_, MakeState(id_, 30), &env);
  EXPECT_GT(env.faults_injected(), 0) << "the fault never fired";
  ExpectStorageErrorNamingTheDirectory(s);

  std::vector<std::string> expected = Files({10, 20});
  expected.insert(expected.end(), GetParam().debris.begin(), GetParam().debris.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(List(dir_), expected) << "backups 10 and 20 untouched; only the debris of 30";
  EXPECT_EQ(NewestGood(), 20);

  // The restarted process writes its next backup with a healthy disk.
  ASSERT_TRUE(WriteBackup(dir_, id_, MakeState(id_, 40)).ok());
  EXPECT_EQ(List(dir_), Files({20, 40}));
  EXPECT_EQ(NewestGood(), 40);
}

// The same through the background writer, as the chief uses it: Flush reports the error.
TEST_P(BackupFaultTest, TheBackgroundWriterReportsItAndKeepsTheNewestGood) {
  FaultInjectionEnv env;
  BackupWriter writer(dir_, id_, &env);
  GetParam().arm(&env);
  ASSERT_TRUE(writer.Submit(MakeState(id_, 30)).ok());
  Status s = writer.Flush(Deadline::AfterSeconds(60));
  ExpectStorageErrorNamingTheDirectory(s);
  EXPECT_EQ(writer.last_written_step(), -1);
  EXPECT_EQ(NewestGood(), 20);
}

const std::string kWeights30 = BackupStem(30) + ".safetensors";

INSTANTIATE_TEST_SUITE_P(
    Faults, BackupFaultTest,
    ::testing::Values(
        // The disk fills up halfway through the weights.
        Fault{"EnospcInTheWeights", [](FaultInjectionEnv* e) { e->FailAppendsAfterBytes(100); }, ENOSPC, {}},
        // The weights are in place, the commit record finds the disk full.
        Fault{"EnospcInTheCommitRecord", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*.json.tmp.*"); },
              ENOSPC, {kWeights30}},
        Fault{"EioOnFsync", [](FaultInjectionEnv* e) { e->FailSyncsMatching("*"); }, EIO, {}},
        Fault{"FailedRenameOfTheWeights", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*.safetensors", EIO); },
              EIO, {}},
        Fault{"FailedRenameOfTheCommitRecord", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*.json", EIO); },
              EIO, {kWeights30}},
        // The process dies once the weights file is in place, before the .json exists;
        // what it wrote but never synced is lost too.
        Fault{"CrashBetweenWeightsAndCommitRecord",
              [](FaultInjectionEnv* e) { e->CrashAfterFiles(1, /*drop_unsynced_data=*/true); }, EIO, {kWeights30}}),
    [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

// An Env on which reading one file fails with `err`, as a disk or a permission would.
class UnreadableFileEnv : public env::EnvWrapper {
 public:
  UnreadableFileEnv(std::string path, int err) : EnvWrapper(env::Default()), path_(std::move(path)), err_(err) {}
  StatusOr<std::string> ReadFile(const std::string& path) override {
    if (path == path_) return ErrnoError("cannot open '" + path + "'", err_);
    return EnvWrapper::ReadFile(path);
  }

 private:
  std::string path_;
  int err_;
};

// A backup the file system refuses to read is not a corrupted one: skipping it would
// resume from an older backup and the next write would delete this good one.
TEST(BackupReadFaultTest, AnUnreadableNewestBackupIsAnErrorNotASkip) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/backup";
  const BackupIdentity id = MakeIdentity();
  for (int64_t step : {10, 20}) ASSERT_TRUE(WriteBackup(dir, id, MakeState(id, step)).ok());
  for (int err : {EACCES, EIO}) {
    UnreadableFileEnv env(dir + "/" + BackupStem(20) + ".safetensors", err);
    std::vector<std::string> warnings;
    auto r = LoadNewestBackup(dir, id, &warnings, &env);
    ASSERT_FALSE(r.ok()) << std::strerror(err);
    EXPECT_EQ(r.status().subject(), Subject::kStorage);
    EXPECT_EQ(ExitCodeFor(r.status()), 6);
    EXPECT_NE(r.status().message().find(dir), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(std::strerror(err)), std::string::npos) << r.status().message();
    EXPECT_TRUE(warnings.empty());
  }
  // Missing weights still mean an incomplete backup: the previous one is used.
  UnreadableFileEnv gone(dir + "/" + BackupStem(20) + ".safetensors", ENOENT);
  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(dir, id, &warnings, &gone);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->state.global_step, 10);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(BackupReadFaultTest, DeleteBackupsReportsAFailedDelete) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/backup";
  const BackupIdentity id = MakeIdentity();
  ASSERT_TRUE(WriteBackup(dir, id, MakeState(id, 10)).ok());
  FaultInjectionEnv env;
  env.CrashAfterFiles(1);
  ASSERT_FALSE(WriteBackup(dir, id, MakeState(id, 20), &env).ok());  // the crash: every later call fails
  Status s = DeleteBackups(dir, &env);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s), 6);
  EXPECT_NE(s.message().find(dir), std::string::npos) << s.message();
  EXPECT_TRUE(DeleteBackups(dir).ok());
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace ringtrain::backup
