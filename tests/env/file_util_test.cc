// The crash-safe whole-file write: the target is either untouched or wholly replaced,
// no temporary file is left behind, and the error names the file and carries errno's
// text and Subject::kStorage -- on the real file system and under every injected fault.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "env/file_util.h"
#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::env {
namespace {

using ::ringtrain::testing::FaultInjectionEnv;
using ::ringtrain::testing::TempDir;

std::vector<std::string> List(const std::string& dir) {
  auto names = Default()->GetChildren(dir);
  EXPECT_TRUE(names.ok()) << names.status().ToString();
  return names.ok() ? *names : std::vector<std::string>{};
}

std::string FileContents(const std::string& path) {
  auto r = Default()->ReadFile(path);
  return r.ok() ? *r : r.status().ToString();  // an error never equals the expected bytes
}

TEST(TemporaryNameTest, TheConventionBackupCleanupRecognises) {
  EXPECT_EQ(TemporaryPathFor("/d/ckpt.json"), "/d/ckpt.json.tmp." + std::to_string(::getpid()));
  EXPECT_TRUE(IsTemporaryName("ckpt.json.tmp.123"));
  EXPECT_TRUE(IsTemporaryName(std::filesystem::path(TemporaryPathFor("/d/x")).filename().string()));
  EXPECT_FALSE(IsTemporaryName("ckpt.json"));
  EXPECT_FALSE(IsTemporaryName("ckpt.json.tmp."));
  EXPECT_FALSE(IsTemporaryName("ckpt.json.tmp.12a"));
  EXPECT_FALSE(IsTemporaryName(".tmp.12"));
}

TEST(WriteFileAtomicallyTest, CreatesParentsAndLeavesNoTempFile) {
  TempDir tmp;
  const std::string path = tmp.path() + "/a/b/ckpt.safetensors";
  ASSERT_TRUE(WriteFileAtomically(Default(), path, "hello").ok());
  EXPECT_EQ(FileContents(path), "hello");
  EXPECT_EQ(List(tmp.path() + "/a/b"), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(WriteFileAtomicallyTest, ReplacesAnExistingFile) {
  TempDir tmp;
  const std::string path = tmp.path() + "/f";
  ASSERT_TRUE(WriteFileAtomically(Default(), path, std::string(10000, 'x')).ok());
  ASSERT_TRUE(WriteFileAtomically(Default(), path, "short").ok());
  EXPECT_EQ(FileContents(path), "short");
  EXPECT_EQ(List(tmp.path()), std::vector<std::string>{"f"});
  ASSERT_TRUE(WriteFileAtomically(Default(), path, "").ok());
  EXPECT_EQ(FileContents(path), "");
}

TEST(WriteFileAtomicallyTest, RelativePathWithoutDirectory) {
  TempDir tmp;
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof(old)), nullptr);
  ASSERT_EQ(chdir(tmp.path().c_str()), 0);
  Status s = WriteFileAtomically(Default(), "plain", "x");
  ASSERT_EQ(chdir(old), 0);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(FileContents(tmp.path() + "/plain"), "x");
}

TEST(WriteFileAtomicallyTest, RealFailuresNameThePathAndLeaveNothingBehind) {
  TempDir tmp;
  const std::string dir = tmp.path();
  ASSERT_TRUE(WriteFileAtomically(Default(), dir + "/file", "x").ok());
  // A parent that is a regular file cannot be created.
  Status s = WriteFileAtomically(Default(), dir + "/file/child", "y");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(dir + "/file/child"), std::string::npos) << s.message();
  EXPECT_TRUE(s.message().find(std::strerror(ENOTDIR)) != std::string::npos ||
              s.message().find(std::strerror(EEXIST)) != std::string::npos)
      << s.message();
  // The target is a directory: the rename fails after the temporary file was written.
  ASSERT_TRUE(Default()->CreateDirectories(dir + "/sub").ok());
  ASSERT_TRUE(WriteFileAtomically(Default(), dir + "/sub/inner", "z").ok());
  s = WriteFileAtomically(Default(), dir + "/sub", "w");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(dir + "/sub"), std::string::npos) << s.message();
  EXPECT_EQ(List(dir), (std::vector<std::string>{"file", "sub"}));  // no temporary file left
  EXPECT_EQ(FileContents(dir + "/file"), "x");
}

// One injected fault: how to arm it, the code and errno it must surface as.
struct Fault {
  std::string name;
  std::function<void(FaultInjectionEnv*)> arm;
  Code code;
  int err;
};

class WriteFileAtomicallyFaultTest : public ::testing::TestWithParam<Fault> {};

// The fault strikes while replacing an existing file and while creating a new one:
// the old file is untouched, the new one never appears, no temporary file is left.
TEST_P(WriteFileAtomicallyFaultTest, TargetUntouchedNoTemporaryLeftErrorNamesPathAndErrno) {
  TempDir tmp;
  const std::string old_path = tmp.path() + "/old.bin";
  const std::string new_path = tmp.path() + "/new.bin";
  ASSERT_TRUE(WriteFileAtomically(Default(), old_path, "the good old bytes").ok());
  const std::string replacement(200000, 'n');
  for (const std::string& path : {old_path, new_path}) {
    FaultInjectionEnv env;
    GetParam().arm(&env);
    Status s = WriteFileAtomically(&env, path, replacement);
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_GT(env.faults_injected(), 0) << "the fault never fired";
    EXPECT_EQ(s.code(), GetParam().code) << s.ToString();
    EXPECT_EQ(s.subject(), Subject::kStorage);
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::strerror(GetParam().err)), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line";
    EXPECT_EQ(FileContents(old_path), "the good old bytes");
    EXPECT_EQ(List(tmp.path()), std::vector<std::string>{"old.bin"});
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, WriteFileAtomicallyFaultTest,
    ::testing::Values(
        Fault{"EnospcMidWrite", [](FaultInjectionEnv* e) { e->FailAppendsAfterBytes(5000); },
              Code::kResourceExhausted, ENOSPC},
        Fault{"EnospcOnTheFile", [](FaultInjectionEnv* e) { e->FailAppendsToFile(1); }, Code::kResourceExhausted,
              ENOSPC},
        Fault{"EnospcForMatchingPaths", [](FaultInjectionEnv* e) { e->FailAppendsMatching("*.bin.tmp.*"); },
              Code::kResourceExhausted, ENOSPC},
        Fault{"EioOnFsync", [](FaultInjectionEnv* e) { e->FailSyncsMatching(); }, Code::kInternal, EIO},
        Fault{"FailedRename", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*", EIO); }, Code::kInternal, EIO},
        Fault{"RenameOntoAFullDisk", [](FaultInjectionEnv* e) { e->FailRenamesMatching("*/*.bin", ENOSPC); },
              Code::kResourceExhausted, ENOSPC}),
    [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

// A crash right after the rename (before the directory's fsync): the file is wholly the
// new one, the call reports that it could not finish, and nothing else is left.
TEST(WriteFileAtomicallyTest, CrashAfterTheRenameLeavesTheWholeNewFile) {
  TempDir tmp;
  const std::string path = tmp.path() + "/f";
  ASSERT_TRUE(WriteFileAtomically(Default(), path, "old").ok());
  FaultInjectionEnv env;
  env.CrashAfterFiles(1, /*drop_unsynced_data=*/true);
  Status s = WriteFileAtomically(&env, path, "new bytes");
  EXPECT_TRUE(env.crashed());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_EQ(FileContents(path), "new bytes") << "synced before the rename: nothing to drop";
  EXPECT_EQ(List(tmp.path()), std::vector<std::string>{"f"});
}

}  // namespace
}  // namespace ringtrain::env
