// BackupWriter: the newest submission reaches the disk, errors are reported, and the
// destructor finishes what was submitted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "backup/backup.h"
#include "backup_test_util.h"
#include "testing/temp_dir.h"

namespace ringtrain::backup {
namespace {

namespace fs = std::filesystem;
using ::ringtrain::testing::TempDir;
using testing::ExpectSameState;
using testing::MakeIdentity;
using testing::MakeState;

// Generous: a deadline that only a hung disk would reach.
Deadline Soon() { return Deadline::After(std::chrono::seconds(60)); }

// The newest backup's step, -1 for none; its contents must equal MakeState's.
int64_t NewestOnDisk(const std::string& dir, const BackupIdentity& id) {
  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(dir, id, &warnings);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(warnings.empty());
  if (!r.ok() || !r->has_value()) return -1;
  ExpectSameState((*r)->state, MakeState(id, (*r)->state.global_step));
  return (*r)->state.global_step;
}

TEST(BackupWriterTest, FlushPutsTheLastSubmissionOnDisk) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/b";
  const BackupIdentity id = MakeIdentity();
  BackupWriter writer(dir, id);
  EXPECT_EQ(writer.last_written_step(), -1);
  for (int64_t step : {10, 20, 30, 40}) ASSERT_TRUE(writer.Submit(MakeState(id, step)).ok());
  Status s = writer.Flush(Soon());
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(writer.last_written_step(), 40);
  EXPECT_EQ(NewestOnDisk(dir, id), 40);

  ASSERT_TRUE(writer.Submit(MakeState(id, 50)).ok());
  ASSERT_TRUE(writer.Flush(Soon()).ok());
  EXPECT_EQ(writer.last_written_step(), 50);
  EXPECT_EQ(NewestOnDisk(dir, id), 50);
}

TEST(BackupWriterTest, FlushWithNothingSubmittedReturnsAtOnce) {
  TempDir tmp;
  BackupWriter writer(tmp.path(), MakeIdentity());
  EXPECT_TRUE(writer.Flush(Deadline::After(std::chrono::milliseconds(0))).ok());
}

TEST(BackupWriterTest, WriteErrorsAreReportedByFlushAndTheNextSubmit) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/b";
  { std::ofstream(dir) << "a regular file where the directory should be"; }
  const BackupIdentity id = MakeIdentity();
  BackupWriter writer(dir, id);
  ASSERT_TRUE(writer.Submit(MakeState(id, 10)).ok());
  Status flushed = writer.Flush(Soon());
  ASSERT_FALSE(flushed.ok());
  EXPECT_NE(flushed.message().find(dir), std::string::npos) << flushed.ToString();
  EXPECT_EQ(writer.last_written_step(), -1);

  // The error stays until a Submit reports it; that submission is still queued.
  Status submitted = writer.Submit(MakeState(id, 20));
  EXPECT_EQ(submitted.ToString(), flushed.ToString());
  EXPECT_FALSE(writer.Flush(Soon()).ok()) << "step 20 fails the same way";

  // Once the directory is usable again, writing resumes; the next Submit still reports step 20's error.
  fs::remove(dir);
  EXPECT_FALSE(writer.Submit(MakeState(id, 30)).ok());
  Status s = writer.Flush(Soon());
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(writer.last_written_step(), 30);
  EXPECT_EQ(NewestOnDisk(dir, id), 30);
}

TEST(BackupWriterTest, InvalidStateIsReportedAsAnError) {
  TempDir tmp;
  const BackupIdentity id = MakeIdentity();
  BackupWriter writer(tmp.path(), id);
  TrainState bad = MakeState(id, 10);
  bad.params.resize(3);
  ASSERT_TRUE(writer.Submit(std::move(bad)).ok());
  EXPECT_EQ(writer.Flush(Soon()).code(), Code::kInvalidArgument);
}

TEST(BackupWriterTest, DestructorWritesWhatIsPending) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/b";
  const BackupIdentity id = MakeIdentity();
  {
    BackupWriter writer(dir, id);
    for (int64_t step : {10, 20, 30}) ASSERT_TRUE(writer.Submit(MakeState(id, step)).ok());
  }
  EXPECT_EQ(NewestOnDisk(dir, id), 30);
}

}  // namespace
}  // namespace ringtrain::backup
