// The test tool itself: each fault of FaultInjectionEnv fires where it says, and only
// there, so that the tests built on it show what they claim.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "env/file_util.h"
#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::testing {
namespace {

std::string Contents(const std::string& path) {
  auto r = env::Default()->ReadFile(path);
  return r.ok() ? *r : r.status().ToString();  // an error never equals the expected bytes
}

Status WriteOnce(env::Env* env, const std::string& path, const std::string& bytes, bool sync = true) {
  RT_ASSIGN_OR_RETURN(auto f, env->NewWritableFile(path));
  RT_RETURN_IF_ERROR(f->Append(bytes));
  if (sync) RT_RETURN_IF_ERROR(f->Sync());
  return f->Close();
}

TEST(FaultInjectionEnvTest, PassesEverythingThroughWhenNothingIsArmed) {
  TempDir tmp;
  FaultInjectionEnv env;
  ASSERT_TRUE(env::WriteFileAtomically(&env, tmp.path() + "/d/f", "bytes").ok());
  EXPECT_EQ(*env.ReadFile(tmp.path() + "/d/f"), "bytes");
  EXPECT_EQ(env.files_completed(), 1);
  EXPECT_EQ(env.faults_injected(), 0);
}

TEST(FaultInjectionEnvTest, AppendsFailWithEnospcAfterTheBudgetWritingWhatFits) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.FailAppendsAfterBytes(10);
  const std::string path = tmp.path() + "/f";
  auto f = env.NewWritableFile(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("12345").ok());
  Status s = (*f)->Append("67890abc");
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find(path), std::string::npos);
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos);
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(Contents(path), "1234567890") << "a full disk takes what fits";
  EXPECT_EQ(env.faults_injected(), 1);
  env.Heal();
  EXPECT_TRUE(WriteOnce(&env, path, "healed").ok());
}

TEST(FaultInjectionEnvTest, TheKthFileAndMatchingPathsFail) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.FailAppendsToFile(2);
  EXPECT_TRUE(WriteOnce(&env, tmp.path() + "/1", "a").ok());
  EXPECT_EQ(WriteOnce(&env, tmp.path() + "/2", "b").code(), Code::kResourceExhausted);
  EXPECT_TRUE(WriteOnce(&env, tmp.path() + "/3", "c").ok());
  env.Heal();
  env.FailAppendsMatching("*/x*");
  EXPECT_EQ(WriteOnce(&env, tmp.path() + "/x1", "d").code(), Code::kResourceExhausted);
  EXPECT_TRUE(WriteOnce(&env, tmp.path() + "/y1", "e").ok());
}

TEST(FaultInjectionEnvTest, SyncAndRenameFailOnlyWhereArmed) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.FailSyncsMatching("*.a");
  Status s = WriteOnce(&env, tmp.path() + "/f.a", "x");
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find(std::strerror(EIO)), std::string::npos) << s.message();
  EXPECT_TRUE(WriteOnce(&env, tmp.path() + "/f.b", "x").ok());
  env.FailRenamesMatching("*/g", EXDEV);
  s = env.RenameFile(tmp.path() + "/f.b", tmp.path() + "/g");
  EXPECT_NE(s.message().find(std::strerror(EXDEV)), std::string::npos) << s.message();
  EXPECT_EQ(Contents(tmp.path() + "/f.b"), "x") << "a failed rename changes nothing";
  EXPECT_TRUE(env.RenameFile(tmp.path() + "/f.b", tmp.path() + "/h").ok());
}

TEST(FaultInjectionEnvTest, CrashAfterTheKthCompletedFileStopsEverything) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.CrashAfterFiles(2);
  ASSERT_TRUE(env::WriteFileAtomically(&env, tmp.path() + "/one", "1").ok());
  EXPECT_FALSE(env.crashed()) << "a temporary file is not complete until it is renamed";
  EXPECT_FALSE(env::WriteFileAtomically(&env, tmp.path() + "/two", "2").ok()) << "its directory fsync comes after";
  EXPECT_TRUE(env.crashed());
  EXPECT_EQ(Contents(tmp.path() + "/two"), "2") << "the file itself is in place";
  EXPECT_FALSE(env.FileExists(tmp.path() + "/one").ok());
  EXPECT_FALSE(env.ReadFile(tmp.path() + "/one").ok());
  EXPECT_FALSE(env::WriteFileAtomically(&env, tmp.path() + "/three", "3").ok());
  EXPECT_FALSE(*env::Default()->FileExists(tmp.path() + "/three"));
}

TEST(FaultInjectionEnvTest, CrashAfterTheKthMatchingFile) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.CrashAfterFiles(1, false, "*.json");
  ASSERT_TRUE(env::WriteFileAtomically(&env, tmp.path() + "/a.bin", "1").ok());
  ASSERT_TRUE(env::WriteFileAtomically(&env, tmp.path() + "/b.bin", "2").ok());
  EXPECT_FALSE(env.crashed());
  EXPECT_FALSE(env::WriteFileAtomically(&env, tmp.path() + "/c.json", "3").ok());
  EXPECT_TRUE(env.crashed());
  env.Heal();
  EXPECT_TRUE(env::WriteFileAtomically(&env, tmp.path() + "/d.bin", "4").ok());
  env.CrashAfterFiles(0);
  EXPECT_TRUE(env.crashed());
}

TEST(FaultInjectionEnvTest, ACrashCanDropWhatWasNeverSynced) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto log = env.NewWritableFile(tmp.path() + "/log");  // written under its final name
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Append("synced;").ok());
  ASSERT_TRUE((*log)->Sync().ok());
  ASSERT_TRUE((*log)->Append("lost").ok());
  env.CrashAfterFiles(1, /*drop_unsynced_data=*/true);
  ASSERT_TRUE(WriteOnce(&env, tmp.path() + "/other", "unsynced", /*sync=*/false).ok());
  EXPECT_TRUE(env.crashed());
  EXPECT_FALSE((*log)->Append("after").ok());
  EXPECT_EQ(Contents(tmp.path() + "/log"), "synced;");
  EXPECT_EQ(Contents(tmp.path() + "/other"), "");
}

}  // namespace
}  // namespace ringtrain::testing
