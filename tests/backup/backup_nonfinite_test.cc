// A backup taken after the run diverged (NaN or infinite weights or optimizer state)
// is not one to resume from: LoadNewestBackup skips it like a corrupted one, with a
// warning naming the tensor, and resumes from the previous backup.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backup/backup.h"
#include "backup_test_util.h"
#include "testing/temp_dir.h"

namespace ringtrain::backup {
namespace {

TEST(BackupNonFiniteTest, ADivergedBackupIsSkippedForThePreviousOne) {
  ::ringtrain::testing::TempDir tmp;
  const BackupIdentity id = testing::MakeIdentity();
  ASSERT_TRUE(WriteBackup(tmp.path(), id, testing::MakeState(id, 10)).ok());
  TrainState diverged = testing::MakeState(id, 20);
  diverged.params[7] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(WriteBackup(tmp.path(), id, diverged).ok());

  std::vector<std::string> warnings;
  auto r = LoadNewestBackup(tmp.path(), id, &warnings);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->state.global_step, 10);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ckpt-000000000020.json is corrupted"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("tensor 'params/dense/kernel' holds NaN at index 7"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("using the previous backup instead"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace ringtrain::backup
