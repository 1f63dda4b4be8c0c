// Data files that are not what they claim: never read past what the header declares,
// never a special file, and every error about the data (exit 3) or, for sizes the job
// asks for, about the configuration. And the shard's memory estimate, from headers only.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/exit_policy.h"
#include "data/dataset.h"
#include "data/footprint.h"
#include "data/idx_file.h"
#include "data_test_util.h"

namespace ringtrain::data {
namespace {

using ::ringtrain::testing::Quoted;

using json = nlohmann::json;
using testing::Gzip;
using testing::IdxImages;
using testing::IdxLabelsFor;
using testing::PutBigEndian32;
using testing::WriteBytes;

class IdxBoundsTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return tmp_.path() + "/" + name; }
  StatusOr<ShardResult> Load(const std::string& images, const std::string& labels) {
    json spec = {{"format", "mnist_idx"}, {"images", images}, {"labels", labels}};
    return LoadShard(spec, tmp_.path(), ShardPolicy::kAuto, 0, 1, "data.train");
  }
  testing::TempDir tmp_;
};

TEST_F(IdxBoundsTest, ADirectoryIsBadDataNamingIt) {
  ::mkdir(Path("images").c_str(), 0700);
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("images", "labels");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().subject(), Subject::kData);
  EXPECT_EQ(ExitCodeFor(r.status()), kExitBadData);
  EXPECT_NE(r.status().message().find(Quoted(Path("images")) + " is a directory, not a regular file"),
            std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("data.train.images"), std::string::npos) << r.status().message();
}

TEST_F(IdxBoundsTest, DevicesAndFifosAreRefusedAtOnce) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  for (const std::string& images : {std::string("/dev/zero"), Path("fifo")}) {
    auto r = Load(images, "labels");
    ASSERT_FALSE(r.ok()) << images;
    EXPECT_EQ(ExitCodeFor(r.status()), kExitBadData) << r.status().message();
    EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos) << r.status().message();
  }
}

TEST_F(IdxBoundsTest, AGzipBombStopsAtTheDeclaredSize) {
  // A header declaring 3 images of 2x2, then 64 MiB of zeros: never inflated past 28 bytes.
  std::string bomb = IdxImages(3, 2, 2) + std::string(64 << 20, '\0');
  WriteBytes(Path("images.gz"), Gzip(bomb));
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  auto r = Load("images.gz", "labels");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_EQ(ExitCodeFor(r.status()), kExitBadData);
  EXPECT_NE(r.status().message().find("decompresses to more than the 28 bytes its IDX header declares"),
            std::string::npos) << r.status().message();
}

TEST_F(IdxBoundsTest, AHeaderClaimingBillionsOfImagesIsRefusedBeforeReading) {
  std::string header;
  PutBigEndian32(&header, 2051);
  PutBigEndian32(&header, 4000000000u);
  PutBigEndian32(&header, 28);
  PutBigEndian32(&header, 28);
  WriteBytes(Path("images"), header + std::string(100, 'x'));
  WriteBytes(Path("images.gz"), Gzip(header + std::string(100, 'x')));
  WriteBytes(Path("labels"), IdxLabelsFor(3));
  for (const char* images : {"images", "images.gz"}) {
    auto r = Load(images, "labels");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(ExitCodeFor(r.status()), kExitBadData) << r.status().message();
    EXPECT_NE(r.status().message().find("declares 3136000000000 bytes of data, more than 4.0 GiB"),
              std::string::npos) << r.status().message();
    // The memory estimate reads the same header and refuses it the same way.
    json spec = {{"format", "mnist_idx"}, {"images", images}, {"labels", "labels"}};
    auto e = EstimateShard(spec, tmp_.path(), ShardPolicy::kAuto, 0, 1, "data.train");
    EXPECT_EQ(e.status().message(), r.status().message());
  }
  // Within 4 GiB, but more than a small gzip file can hold.
  header.clear();
  PutBigEndian32(&header, 2051);
  PutBigEndian32(&header, 1000000);
  PutBigEndian32(&header, 28);
  PutBigEndian32(&header, 28);
  WriteBytes(Path("small.gz"), Gzip(header + std::string(100, 'x')));
  auto r = Load("small.gz", "labels");
  EXPECT_EQ(ExitCodeFor(r.status()), kExitBadData) << r.status().message();
  EXPECT_NE(r.status().message().find("cannot hold more than about 1032 times that"), std::string::npos)
      << r.status().message();
}

TEST_F(IdxBoundsTest, ReadIdxHeaderPeeksWithoutReadingTheData) {
  const std::string images = IdxImages(50, 8, 8);
  WriteBytes(Path("raw"), images);
  WriteBytes(Path("gz"), Gzip(images));
  for (const char* name : {"raw", "gz"}) {
    auto h = ReadIdxHeader(Path(name), "f");
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->gzipped, std::string(name) == "gz");
    EXPECT_TRUE(h->looks_like_idx);
    EXPECT_EQ(h->dims, (std::vector<uint32_t>{50, 8, 8}));
    EXPECT_EQ(h->header_bytes, 16u);
    EXPECT_EQ(h->data_bytes, 50u * 64);
  }
  WriteBytes(Path("text"), "hello, world");
  auto h = ReadIdxHeader(Path("text"), "f");
  ASSERT_TRUE(h.ok());
  EXPECT_FALSE(h->looks_like_idx);
}

TEST(GunzipBoundTest, OutputPastTheBoundIsDataLoss) {
  const std::string data(100000, 'a');
  auto r = Gunzip(Gzip(data), "mem", 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_NE(r.status().message().find("decompresses to more than 1000 bytes"), std::string::npos);
  auto exact = Gunzip(Gzip(data), "mem", data.size());
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(*exact, data);
  auto head = GunzipPrefix(Gzip(data).substr(0, 40), "mem", 16);  // a cut stream is fine for a prefix
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(*head, std::string(16, 'a'));
}

TEST_F(IdxBoundsTest, ShardEstimateComesFromTheHeaders) {
  WriteBytes(Path("images.gz"), Gzip(IdxImages(100, 4, 5)));
  WriteBytes(Path("labels"), IdxLabelsFor(100));
  json spec = {{"format", "mnist_idx"}, {"images", "images.gz"}, {"labels", "labels"}};
  auto one = EstimateShard(spec, tmp_.path(), ShardPolicy::kAuto, 0, 1, "data.train");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->what, "data.train as loaded");
  // Raw pixels and labels, the largest file twice, and 100 examples of 20 floats + a label.
  EXPECT_EQ(one->bytes, (2000 + 400) + 2 * (2000 + 100) + 100 * (20 * 4 + 4));
  EXPECT_NE(one->cause.find("100 examples of 20 values in 1 file"), std::string::npos) << one->cause;
  auto half = EstimateShard(spec, tmp_.path(), ShardPolicy::kData, 1, 2, "data.train");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->bytes, (2000 + 400) + 2 * (2000 + 100) + 50 * (20 * 4 + 4));
  json synthetic = {{"format", "synthetic"}, {"count", 1000000000}, {"shape", {8, 8}}};
  EXPECT_FALSE(EstimateShard(synthetic, "", ShardPolicy::kAuto, 0, 1, "data.train").ok());  // over the spec's own cap
  synthetic["count"] = 1000;
  auto s = EstimateShard(synthetic, "", ShardPolicy::kAuto, 0, 1, "data.train");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bytes, 1000u * (64 * 4 + 4));
  EXPECT_EQ(s->remedy, "lower data.train.count");
  // Missing files: the same error LoadShard gives, about the data.
  spec["images"] = "nope.gz";
  auto missing = EstimateShard(spec, tmp_.path(), ShardPolicy::kAuto, 0, 1, "data.train");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(ExitCodeFor(missing.status()), kExitBadData);
}

TEST_F(IdxBoundsTest, BadSpecsAreAboutTheConfiguration) {
  json spec = {{"format", "synthetic"}, {"count", 1e30}};
  auto r = LoadShard(spec, tmp_.path(), ShardPolicy::kAuto, 0, 1, "data.train");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ExitCodeFor(r.status()), kExitBadConfig);
  EXPECT_NE(r.status().message().find("data.train.count: must be an integer, got 1e+30"), std::string::npos)
      << r.status().message();
  spec = {{"format", "synthetic"}, {"count", 10}, {"noise", 1e300}};
  EXPECT_EQ(ExitCodeFor(LoadShard(spec, "", ShardPolicy::kAuto, 0, 1, "data.train").status()), kExitBadConfig);
}

}  // namespace
}  // namespace ringtrain::data
