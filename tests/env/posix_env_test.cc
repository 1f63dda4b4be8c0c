// The POSIX Env: each call does what env.h says, and its errors name the path and carry
// errno's text with common's codes (a real full disk: /dev/full).
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "env/env.h"
#include "env/file_util.h"
#include "testing/temp_dir.h"

namespace ringtrain::env {
namespace {

using ::ringtrain::testing::TempDir;

std::string ReadOk(const std::string& path) {
  auto r = Default()->ReadFile(path);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

void Write(const std::string& path, const std::string& bytes) {
  auto f = Default()->NewWritableFile(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->Append(bytes).ok());
  ASSERT_TRUE((*f)->Close().ok());
}

TEST(PosixEnvTest, DefaultIsOneProcessWideEnv) { EXPECT_EQ(Default(), Default()); }

TEST(PosixEnvTest, CreateDirectoriesAndAskWhatIsThere) {
  TempDir tmp;
  Env* env = Default();
  const std::string dir = tmp.path() + "/a/b/c";
  ASSERT_TRUE(env->CreateDirectories(dir).ok());
  ASSERT_TRUE(env->CreateDirectories(dir).ok()) << "an existing directory is fine";
  EXPECT_TRUE(*env->IsDirectory(dir));
  EXPECT_TRUE(*env->FileExists(dir));
  Write(dir + "/f", "x");
  EXPECT_TRUE(*env->FileExists(dir + "/f"));
  EXPECT_FALSE(*env->IsDirectory(dir + "/f"));
  EXPECT_FALSE(*env->FileExists(dir + "/missing"));
  EXPECT_FALSE(*env->IsDirectory(dir + "/missing"));
  EXPECT_FALSE(*env->FileExists(dir + "/f/under_a_file")) << "ENOTDIR: nothing is there";

  Status s = env->CreateDirectories(dir + "/f/sub");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + "/f/sub"), std::string::npos) << s.message();
  EXPECT_EQ(s.subject(), Subject::kUnknown) << "the Env does not decide what a failure concerns";
}

TEST(PosixEnvTest, WritableFileAppendsSyncsAndCloses) {
  TempDir tmp;
  const std::string path = tmp.path() + "/f";
  auto f = Default()->NewWritableFile(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->path(), path);
  ASSERT_TRUE((*f)->Append("hello, ").ok());
  ASSERT_TRUE((*f)->Append(std::string(100000, 'x')).ok());
  ASSERT_TRUE((*f)->Flush().ok());
  ASSERT_TRUE((*f)->Sync().ok());
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(ReadOk(path), "hello, " + std::string(100000, 'x'));
  EXPECT_EQ((*f)->Append("more").code(), Code::kFailedPrecondition);
  EXPECT_EQ((*f)->Close().code(), Code::kFailedPrecondition);
  // Truncates an existing file.
  Write(path, "short");
  EXPECT_EQ(ReadOk(path), "short");
}

TEST(PosixEnvTest, DestructorClosesAnOpenFileAndKeepsItsBytes) {
  TempDir tmp;
  const std::string path = tmp.path() + "/f";
  {
    auto f = Default()->NewWritableFile(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append("kept").ok());
  }
  EXPECT_EQ(ReadOk(path), "kept");
}

TEST(PosixEnvTest, ExclusiveFileRefusesAnExistingPath) {
  TempDir tmp;
  const std::string path = tmp.path() + "/f";
  auto first = Default()->NewExclusiveFile(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE((*first)->Append("mine").ok());
  auto second = Default()->NewExclusiveFile(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(path), std::string::npos);
  ASSERT_TRUE((*first)->Close().ok());
  EXPECT_EQ(ReadOk(path), "mine");
}

TEST(PosixEnvTest, AFullDiskIsResourceExhaustedWithErrnoText) {
  // /dev/full: every write fails with ENOSPC, as on a full file system.
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full on this machine";
  auto f = Default()->NewWritableFile("/dev/full");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  Status s = (*f)->Append("x");
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos) << s.message();
}

TEST(PosixEnvTest, RenameReplacesTheTargetAndMissingSourceIsNotFound) {
  TempDir tmp;
  Env* env = Default();
  Write(tmp.path() + "/a", "new");
  Write(tmp.path() + "/b", "old");
  ASSERT_TRUE(env->RenameFile(tmp.path() + "/a", tmp.path() + "/b").ok());
  EXPECT_EQ(ReadOk(tmp.path() + "/b"), "new");
  EXPECT_FALSE(*env->FileExists(tmp.path() + "/a"));
  Status s = env->RenameFile(tmp.path() + "/a", tmp.path() + "/c");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find(tmp.path() + "/a"), std::string::npos) << s.message();
}

TEST(PosixEnvTest, DeleteFileAndDirectory) {
  TempDir tmp;
  Env* env = Default();
  const std::string dir = tmp.path() + "/d";
  ASSERT_TRUE(env->CreateDirectories(dir).ok());
  Write(dir + "/f", "x");
  EXPECT_EQ(env->DeleteDir(dir).code(), Code::kFailedPrecondition) << "not empty";
  ASSERT_TRUE(env->DeleteFile(dir + "/f").ok());
  EXPECT_EQ(env->DeleteFile(dir + "/f").code(), Code::kNotFound);
  ASSERT_TRUE(env->DeleteDir(dir).ok());
  EXPECT_EQ(env->DeleteDir(dir).code(), Code::kNotFound);
}

TEST(PosixEnvTest, ChildrenAreSortedNamesWithoutDots) {
  TempDir tmp;
  Env* env = Default();
  Write(tmp.path() + "/b", "");
  Write(tmp.path() + "/a", "");
  ASSERT_TRUE(env->CreateDirectories(tmp.path() + "/c").ok());
  auto names = env->GetChildren(tmp.path());
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(env->GetChildren(tmp.path() + "/missing").status().code(), Code::kNotFound);
}

TEST(PosixEnvTest, SyncDirAndReadFile) {
  TempDir tmp;
  Env* env = Default();
  EXPECT_TRUE(env->SyncDir(tmp.path()).ok());
  EXPECT_EQ(env->SyncDir(tmp.path() + "/missing").code(), Code::kNotFound);
  auto r = env->ReadFile(tmp.path() + "/missing");
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("missing"), std::string::npos);
}

TEST(DeleteRecursivelyTest, DeletesATreeButNeverFollowsALink) {
  TempDir tmp;
  Env* env = Default();
  const std::string outside = tmp.path() + "/outside";
  ASSERT_TRUE(env->CreateDirectories(outside).ok());
  Write(outside + "/precious", "keep me");
  const std::string dir = tmp.path() + "/tree";
  ASSERT_TRUE(env->CreateDirectories(dir + "/sub/deeper").ok());
  Write(dir + "/f", "x");
  Write(dir + "/sub/deeper/g", "y");
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/link").c_str()), 0);
  ASSERT_TRUE(DeleteRecursively(env, dir).ok());
  EXPECT_FALSE(*env->FileExists(dir));
  EXPECT_EQ(ReadOk(outside + "/precious"), "keep me");
  EXPECT_TRUE(DeleteRecursively(env, dir).ok()) << "nothing there is fine";
}

}  // namespace
}  // namespace ringtrain::env
