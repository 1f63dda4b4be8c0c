// Crash-safe file writes and the safetensors file helpers.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/safetensors.h"
#include "testing/temp_dir.h"

namespace ringtrain::checkpoint {
namespace {

using ::ringtrain::testing::TempDir;

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FileIoTest, WriteCreatesParentsAndLeavesNoTempFile) {
  TempDir tmp;
  const std::string dir = tmp.path();
  const std::string path = dir + "/a/b/ckpt.safetensors";
  ASSERT_TRUE(WriteFileAtomically(path, "hello").ok());
  auto r = ReadFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "hello");
  EXPECT_EQ(List(dir + "/a/b"), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(FileIoTest, WriteReplacesAnExistingFile) {
  TempDir tmp;
  const std::string dir = tmp.path();
  const std::string path = dir + "/f";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(10000, 'x')).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "short").ok());
  EXPECT_EQ(*ReadFile(path), "short");
  EXPECT_EQ(List(dir), std::vector<std::string>{"f"});
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  EXPECT_EQ(*ReadFile(path), "");
}

TEST(FileIoTest, RelativePathWithoutDirectory) {
  TempDir tmp;
  const std::string dir = tmp.path();
  char old[4096];
  ASSERT_NE(getcwd(old, sizeof(old)), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  Status s = WriteFileAtomically("plain", "x");
  ASSERT_EQ(chdir(old), 0);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(*ReadFile(dir + "/plain"), "x");
}

TEST(FileIoTest, FailureNamesThePathAndLeavesNothingBehind) {
  TempDir tmp;
  const std::string dir = tmp.path();
  ASSERT_TRUE(WriteFileAtomically(dir + "/file", "x").ok());
  // A parent that is a regular file cannot be created.
  Status s = WriteFileAtomically(dir + "/file/child", "y");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + "/file/child"), std::string::npos) << s.message();
  EXPECT_TRUE(s.message().find(std::strerror(ENOTDIR)) != std::string::npos ||
              s.message().find(std::strerror(EEXIST)) != std::string::npos)
      << s.message();  // the errno text
  // The target is a directory: rename fails after the temp file was written.
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomically(dir + "/sub/inner", "z").ok());
  s = WriteFileAtomically(dir + "/sub", "w");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir + "/sub"), std::string::npos) << s.message();
  EXPECT_EQ(List(dir), (std::vector<std::string>{"file", "sub"}));  // no temp file left
  EXPECT_EQ(*ReadFile(dir + "/file"), "x");
}

TEST(FileIoTest, ReadMissingFileIsNotFound) {
  TempDir tmp;
  auto r = ReadFile(tmp.path() + "/nope");
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

TEST(FileIoTest, SaveAndLoadSafetensors) {
  TempDir tmp;
  const std::string path = tmp.path() + "/ckpt/model.safetensors";
  std::vector<float> w = {1.5f, -2.5f, 3.25f, 0.f};
  ASSERT_TRUE(SaveSafetensors(path, {{"w", {2, 2}, w.data()}}, {{"step", "100"}}).ok());
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> meta;
  Status s = LoadSafetensors(path, &tensors, &meta);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(tensors.at("w").data, w);
  EXPECT_EQ(tensors.at("w").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(meta.at("step"), "100");
  EXPECT_EQ(*ReadFile(path), EncodeSafetensors({{"w", {2, 2}, w.data()}}, {{"step", "100"}}));
}

TEST(FileIoTest, LoadCorruptFileNamesIt) {
  TempDir tmp;
  const std::string path = tmp.path() + "/bad.safetensors";
  ASSERT_TRUE(WriteFileAtomically(path, "garbage!garbage!").ok());
  std::map<std::string, Tensor> tensors;
  Status s = LoadSafetensors(path, &tensors, nullptr);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_EQ(LoadSafetensors(path + ".missing", &tensors, nullptr).code(), Code::kNotFound);
}

TEST(FileIoTest, SaveRejectsBadTensorLists) {
  TempDir tmp;
  const std::string path = tmp.path() + "/x.safetensors";
  const float v[] = {1};
  EXPECT_EQ(SaveSafetensors(path, {{"a", {1}, v}, {"a", {1}, v}}, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(SaveSafetensors(path, {{"__metadata__", {1}, v}}, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(SaveSafetensors(path, {{"a", {-1}, v}}, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(SaveSafetensors(path, {{"a", {2}, nullptr}}, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ReadFile(path).status().code(), Code::kNotFound);  // nothing written
}

}  // namespace
}  // namespace ringtrain::checkpoint
