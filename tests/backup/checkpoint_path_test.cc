// ModelCheckpoint file names, formatted as Keras (Python's str.format) would.
#include <gtest/gtest.h>

#include "backup/backup.h"

namespace ringtrain::backup {
namespace {

std::string Format(const std::string& pattern, int epoch) {
  auto r = FormatCheckpointPath(pattern, epoch);
  EXPECT_TRUE(r.ok()) << pattern << ": " << r.status().ToString();
  return r.ok() ? *r : "<error>";
}

TEST(CheckpointPathTest, EpochField) {
  EXPECT_EQ(Format("ckpt/ckpt_{epoch}.safetensors", 7), "ckpt/ckpt_7.safetensors");
  EXPECT_EQ(Format("{epoch}-{epoch}", 12), "12-12");
  EXPECT_EQ(Format("e{epoch:d}", 3), "e3");
}

TEST(CheckpointPathTest, PaddedEpochField) {
  EXPECT_EQ(Format("ckpt_{epoch:03d}.safetensors", 7), "ckpt_007.safetensors");
  EXPECT_EQ(Format("ckpt_{epoch:02d}", 123), "ckpt_123");
  EXPECT_EQ(Format("ckpt_{epoch:4d}", 5), "ckpt_   5");
  EXPECT_EQ(Format("{epoch:03d}", 0), "000");
}

TEST(CheckpointPathTest, NoFieldAndEscapedBraces) {
  EXPECT_EQ(Format("model.safetensors", 4), "model.safetensors");
  EXPECT_EQ(Format("", 4), "");
  EXPECT_EQ(Format("a{{epoch}}b_{epoch}", 4), "a{epoch}b_4");
}

TEST(CheckpointPathTest, OtherFieldsAreRefused) {
  for (const char* bad : {"ckpt_{loss}.safetensors", "{epoch:x}", "{epoch:03f}", "{}", "{epoch", "a}b",
                          "{epoch:0}", "{epoch:-3d}", "{epoch:999d}", "{val_loss:.2f}"}) {
    auto r = FormatCheckpointPath(bad, 1);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
  }
  EXPECT_NE(FormatCheckpointPath("{loss}", 1).status().message().find("{epoch:0Nd}"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain::backup
