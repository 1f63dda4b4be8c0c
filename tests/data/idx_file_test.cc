// Reading IDX files: raw and gzip, and every way a file can be wrong.
#include "data/idx_file.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data_test_util.h"

namespace ringtrain::data {
namespace {

using json = nlohmann::json;
using testing::Gzip;
using testing::IdxImages;
using testing::IdxLabelsFor;
using testing::WriteBytes;

class IdxFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  StatusOr<ShardResult> Load(const std::string& images, const std::string& labels) {
    json spec = {{"format", "mnist_idx"}, {"images", images}, {"labels", labels}};
    return LoadShard(spec, dir_, ShardPolicy::kAuto, 0, 1, "data.train");
  }
  testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(IdxFileTest, RawAndGzippedParseIdentically) {
  const std::string images = IdxImages(6, 3, 4), labels = IdxLabelsFor(6);
  WriteBytes(Path("raw-images"), images);
  WriteBytes(Path("raw-labels"), labels);
  WriteBytes(Path("gz-images.gz"), Gzip(images));
  WriteBytes(Path("gz-labels.gz"), Gzip(labels));
  auto raw = Load("raw-images", "raw-labels");
  auto gz = Load("gz-images.gz", "gz-labels.gz");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  EXPECT_EQ(raw->data.size(), 6u);
  EXPECT_EQ(raw->data.example_shape, (std::vector<int>{3, 4}));
  EXPECT_EQ(raw->data.example_size, 12u);
  EXPECT_EQ(raw->data.num_classes, 10);
  EXPECT_EQ(raw->data.images, gz->data.images);
  EXPECT_EQ(raw->data.labels, gz->data.labels);
  EXPECT_EQ(raw->data.labels, (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  // Pixels are x / 255: check one against the file's byte.
  const uint8_t byte = static_cast<uint8_t>(images[16 + 12 * 2 + 5]);
  EXPECT_FLOAT_EQ(raw->data.images[12 * 2 + 5], byte / 255.f);
}

TEST_F(IdxFileTest, CompressionIsDetectedByMagicNotByName) {
  const std::string images = IdxImages(4, 2, 2), labels = IdxLabelsFor(4);
  WriteBytes(Path("raw-named.gz"), images);         // raw despite the name
  WriteBytes(Path("compressed-labels"), Gzip(labels));  // gzip without the name
  auto r = Load("raw-named.gz", "compressed-labels");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data.size(), 4u);
}

TEST_F(IdxFileTest, MultiMemberGzipIsReadWhole) {
  const std::string images = IdxImages(5, 2, 2);
  WriteBytes(Path("images.gz"), Gzip(images.substr(0, 10)) + Gzip(images.substr(10)));
  WriteBytes(Path("labels"), IdxLabelsFor(5));
  auto r = Load("images.gz", "labels");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data.size(), 5u);
}

TEST_F(IdxFileTest, TruncatedRawFileIsDataLoss) {
  const std::string images = IdxImages(6, 3, 4);
  WriteBytes(Path("images"), images.substr(0, images.size() - 7));
  WriteBytes(Path("labels"), IdxLabelsFor(6));
  auto r = Load("images", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find(Path("images")), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, TruncatedHeaderIsDataLoss) {
  WriteBytes(Path("images"), IdxImages(6, 3, 4).substr(0, 9));
  WriteBytes(Path("labels"), IdxLabelsFor(6));
  EXPECT_EQ(Load("images", "labels").status().code(), Code::kDataLoss);
  WriteBytes(Path("empty"), "");
  EXPECT_EQ(Load("empty", "labels").status().code(), Code::kDataLoss);
}

TEST_F(IdxFileTest, TruncatedGzipIsDataLoss) {
  const std::string gz = Gzip(IdxImages(50, 8, 8));
  WriteBytes(Path("images.gz"), gz.substr(0, gz.size() / 2));
  WriteBytes(Path("labels"), IdxLabelsFor(50));
  auto r = Load("images.gz", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("truncated gzip"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(Path("images.gz")), std::string::npos);
}

TEST_F(IdxFileTest, CorruptGzipIsDataLoss) {
  std::string gz = Gzip(IdxImages(50, 8, 8));
  for (size_t i = 12; i < gz.size() - 8; i += 7) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  WriteBytes(Path("images.gz"), gz);
  WriteBytes(Path("labels"), IdxLabelsFor(50));
  EXPECT_EQ(Load("images.gz", "labels").status().code(), Code::kDataLoss);
}

TEST_F(IdxFileTest, WrongMagicIsDataLoss) {
  std::string images = IdxImages(3, 2, 2);
  images[3] = 0x02;  // 2050
  WriteBytes(Path("images"), images);
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("images", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("magic"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("2051"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, SwappedImagesAndLabelsSaySo) {
  WriteBytes(Path("images"), IdxImages(3, 2, 2));
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("labels", "images");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("swapped"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, TrailingBytesAreDataLoss) {
  WriteBytes(Path("images"), IdxImages(3, 2, 2) + "xx");
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("images", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("2 unexpected bytes"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, MissingFileIsNotFoundNamingPathAndField) {
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("no-such-images.gz", "labels");
  ASSERT_EQ(r.status().code(), Code::kNotFound);
  const std::string want = std::string("'") + Path("no-such-images.gz") + "' does not exist";
  EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("(data.train.images)"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, LabelCountMustMatchImageCount) {
  WriteBytes(Path("images"), IdxImages(4, 2, 2));
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("images", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("3 labels"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, LabelsMustBeDigits) {
  WriteBytes(Path("images"), IdxImages(3, 2, 2));
  WriteBytes(Path("labels"), testing::IdxLabels({1, 10, 2}));
  auto r = Load("images", "labels");
  ASSERT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("label 10 of example 1"), std::string::npos) << r.status().message();
}

TEST_F(IdxFileTest, ImageSizesMustAgreeAcrossFiles) {
  WriteBytes(Path("a"), IdxImages(3, 2, 2));
  WriteBytes(Path("b"), IdxImages(3, 3, 3));
  WriteBytes(Path("l"), IdxLabelsFor(3));
  json spec = {{"format", "mnist_idx"}, {"images", {"a", "b"}}, {"labels", {"l", "l"}}};
  auto r = LoadShard(spec, dir_, ShardPolicy::kOff, 0, 1, "data.train");
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("data.train.images[1]"), std::string::npos) << r.status().message();
}

TEST(GunzipTest, RoundTripsLargeInput) {
  std::string big(3 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  auto r = Gunzip(Gzip(big), "mem");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, big);
}

}  // namespace
}  // namespace ringtrain::data
