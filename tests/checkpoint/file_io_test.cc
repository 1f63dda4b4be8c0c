// The safetensors file helpers: a save and a load through an env::Env, and what a
// failure of either is (Subject::kStorage). The crash-safe write itself is tested in
// tests/env/file_util_test.cc.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include "checkpoint/safetensors.h"
#include "common/file.h"
#include "env/file_util.h"
#include "testing/fault_injection_env.h"
#include "testing/temp_dir.h"

namespace ringtrain::checkpoint {
namespace {

using ::ringtrain::testing::FaultInjectionEnv;
using ::ringtrain::testing::TempDir;

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
  ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, "garbage!garbage!").ok());
  std::map<std::string, Tensor> tensors;
  Status s = LoadSafetensors(path, &tensors, nullptr);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  s = LoadSafetensors(path + ".missing", &tensors, nullptr);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.subject(), Subject::kStorage);
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

// A full disk while saving: the error is kStorage and names the file; the model saved
// before is still whole.
TEST(FileIoTest, SaveOnAFullDiskKeepsThePreviousFile) {
  TempDir tmp;
  const std::string path = tmp.path() + "/model.safetensors";
  std::vector<float> before(1000, 1.0f), after(1000, 2.0f);
  ASSERT_TRUE(SaveSafetensors(path, {{"w", {1000}, before.data()}}, {}).ok());
  const std::string saved = *ReadFile(path);
  FaultInjectionEnv env;
  env.FailAppendsAfterBytes(100);
  Status s = SaveSafetensors(path, {{"w", {1000}, after.data()}}, {}, &env);
  EXPECT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(std::strerror(ENOSPC)), std::string::npos) << s.message();
  EXPECT_EQ(*ReadFile(path), saved);
}

// An Env whose disk returns EIO on every read (LevelDB's way: override one call).
class UnreadableEnv : public env::EnvWrapper {
 public:
  UnreadableEnv() : EnvWrapper(env::Default()) {}
  StatusOr<std::string> ReadFile(const std::string& path) override {
    return ErrnoError("cannot read '" + path + "'", EIO);
  }
};

TEST(FileIoTest, LoadReadsThroughTheEnv) {
  TempDir tmp;
  const std::string path = tmp.path() + "/model.safetensors";
  const float v[] = {1};
  ASSERT_TRUE(SaveSafetensors(path, {{"a", {1}, v}}, {}).ok());
  UnreadableEnv env;
  std::map<std::string, Tensor> tensors;
  Status s = LoadSafetensors(path, &tensors, nullptr, &env);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_EQ(s.subject(), Subject::kStorage);
  EXPECT_NE(s.message().find(std::strerror(EIO)), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ringtrain::checkpoint
