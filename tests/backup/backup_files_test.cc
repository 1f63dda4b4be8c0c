// The backup directory: keeping the newest two, falling back past corrupted backups,
// refusing other jobs' backups, and cleaning up after killed writers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backup/backup.h"
#include "backup_test_util.h"
#include "common/file.h"
#include "testing/temp_dir.h"

namespace ringtrain::backup {
namespace {

namespace fs = std::filesystem;
using ::ringtrain::testing::TempDir;
using testing::ExpectSameState;
using testing::List;
using testing::MakeIdentity;
using testing::MakeState;


std::string PathOf(const std::string& dir, int64_t step, const std::string& ext) {
  return dir + "/" + BackupStem(step) + ext;
}

void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  ASSERT_TRUE(f.good()) << path;
}

std::string ReadRaw(const std::string& path) {
  auto r = ReadFile(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

class BackupFilesTest : public ::testing::Test {
 protected:
  void Write(int64_t step) {
    Status s = WriteBackup(dir_, id_, MakeState(id_, step));
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Loads and expects success; returns the loaded step, -1 for none.
  int64_t LoadStep(std::vector<std::string>* warnings) {
    auto r = LoadNewestBackup(dir_, id_, warnings);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || !r->has_value()) return -1;
    ExpectSameState((*r)->state, MakeState(id_, (*r)->state.global_step));
    EXPECT_EQ((*r)->path, PathOf(dir_, (*r)->state.global_step, ".json"));
    return (*r)->state.global_step;
  }

  TempDir tmp_;
  const std::string dir_ = tmp_.path() + "/backup";
  const BackupIdentity id_ = MakeIdentity();
};

TEST_F(BackupFilesTest, KeepsTheNewestTwoAndLoadsTheNewest) {
  Write(10);
  Write(20);
  Write(30);
  EXPECT_EQ(List(dir_), (std::vector<std::string>{"ckpt-000000000020.json", "ckpt-000000000020.safetensors",
                                                  "ckpt-000000000030.json", "ckpt-000000000030.safetensors"}));
  std::vector<std::string> warnings;
  EXPECT_EQ(LoadStep(&warnings), 30);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(BackupFilesTest, CorruptedNewestFallsBackToThePreviousWithAWarning) {
  const std::string weights = PathOf(dir_, 30, ".safetensors");
  const std::string metadata = PathOf(dir_, 30, ".json");
  struct Case {
    const char* what;
    std::function<void()> corrupt;
  };
  const std::vector<Case> cases = {
      {"flipped byte", [&] {
         std::string b = ReadRaw(weights);
         b[b.size() - 3] ^= 0x40;
         WriteRaw(weights, b);
       }},
      {"truncated weights", [&] { fs::resize_file(weights, fs::file_size(weights) / 2); }},
      {"missing weights", [&] { fs::remove(weights); }},
      {"empty weights", [&] { WriteRaw(weights, ""); }},
      {"garbage metadata", [&] { WriteRaw(metadata, "\x01\x02 not json"); }},
      {"truncated metadata", [&] { fs::resize_file(metadata, 40); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(dir_);
    Write(20);
    Write(30);
    c.corrupt();
    std::vector<std::string> warnings;
    EXPECT_EQ(LoadStep(&warnings), 20);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(metadata), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("corrupted"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("using the previous backup instead"), std::string::npos) << warnings[0];
  }
}

TEST_F(BackupFilesTest, AllCorruptedGivesNothingAndAWarningEach) {
  Write(20);
  Write(30);
  WriteRaw(PathOf(dir_, 20, ".json"), "{}");
  fs::remove(PathOf(dir_, 30, ".safetensors"));
  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(dir_, id_, &warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("ckpt-000000000030.json"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("missing"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("ckpt-000000000020.json"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("no older backup"), std::string::npos) << warnings[1];
}

TEST_F(BackupFilesTest, MissingOrEmptyDirectoryGivesNothingWithoutWarnings) {
  std::vector<std::string> warnings;
  EXPECT_EQ(LoadStep(&warnings), -1);
  fs::create_directories(dir_);
  EXPECT_EQ(LoadStep(&warnings), -1);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(BackupFilesTest, AnotherJobsBackupIsAnErrorEvenBehindACorruptedOne) {
  Write(20);
  Write(30);
  WriteRaw(PathOf(dir_, 30, ".json"), "garbage");
  BackupIdentity other = id_;
  other.num_workers = 3;
  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(dir_, other, &warnings);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(dir_), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("num_workers"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("backup_dir elsewhere"), std::string::npos) << r.status().message();

  // Still refused, not skipped, when its weights are gone too.
  fs::remove(PathOf(dir_, 20, ".safetensors"));
  EXPECT_EQ(LoadNewestBackup(dir_, other, &warnings).status().code(), Code::kFailedPrecondition);
}

TEST_F(BackupFilesTest, StrayFilesAreIgnoredByReadersAndRemovedByTheNextWriter) {
  Write(10);
  Write(20);
  fs::create_directories(dir_);
  WriteRaw(dir_ + "/ckpt-000000000020.json.tmp.123", "half a file");
  WriteRaw(dir_ + "/ckpt-000000000030.safetensors.tmp.99", "half a file");
  WriteRaw(PathOf(dir_, 30, ".safetensors"), ReadRaw(PathOf(dir_, 20, ".safetensors")));  // never committed
  WriteRaw(dir_ + "/notes.txt", "not ours");
  WriteRaw(dir_ + "/ckpt-1.json", "not ours either");

  std::vector<std::string> warnings;
  EXPECT_EQ(LoadStep(&warnings), 20);
  EXPECT_TRUE(warnings.empty());

  Write(25);
  EXPECT_EQ(List(dir_), (std::vector<std::string>{"ckpt-000000000020.json", "ckpt-000000000020.safetensors",
                                                  "ckpt-000000000025.json", "ckpt-000000000025.safetensors",
                                                  "ckpt-1.json", "notes.txt"}));
  EXPECT_EQ(LoadStep(&warnings), 25);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(BackupFilesTest, WriterDropsBackupsNewerThanTheOneItWrites) {
  // Resumed from 20 because 30 was corrupted: the next backup, 25, must win.
  Write(20);
  Write(30);
  fs::resize_file(PathOf(dir_, 30, ".safetensors"), 100);
  std::vector<std::string> warnings;
  EXPECT_EQ(LoadStep(&warnings), 20);
  Write(25);
  EXPECT_EQ(List(dir_), (std::vector<std::string>{"ckpt-000000000020.json", "ckpt-000000000020.safetensors",
                                                  "ckpt-000000000025.json", "ckpt-000000000025.safetensors"}));
  warnings.clear();
  EXPECT_EQ(LoadStep(&warnings), 25);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(BackupFilesTest, RewritingTheSameStepReplacesIt) {
  Write(20);
  Write(20);
  std::vector<std::string> warnings;
  EXPECT_EQ(LoadStep(&warnings), 20);
  EXPECT_EQ(List(dir_).size(), 2u);
}

TEST_F(BackupFilesTest, DeleteBackupsLeavesForeignFilesAndRemovesAnEmptyDirectory) {
  Write(10);
  Write(20);
  WriteRaw(dir_ + "/ckpt-000000000030.json.tmp.7", "x");
  WriteRaw(dir_ + "/mine.txt", "keep");
  ASSERT_TRUE(DeleteBackups(dir_).ok());
  EXPECT_EQ(List(dir_), (std::vector<std::string>{"mine.txt"}));

  fs::remove(dir_ + "/mine.txt");
  Write(40);
  ASSERT_TRUE(DeleteBackups(dir_).ok());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_TRUE(DeleteBackups(dir_).ok()) << "a missing directory is fine";
}

TEST_F(BackupFilesTest, BackupDirThatIsAFileIsAnError) {
  fs::create_directories(tmp_.path());
  WriteRaw(dir_, "a file");
  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(dir_, id_, &warnings);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir_), std::string::npos) << r.status().message();
  Status s = WriteBackup(dir_, id_, MakeState(id_, 10));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ringtrain::backup
