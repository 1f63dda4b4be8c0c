// The "tfrecord" source: files and globs, FILE sharding's file lists, the features,
// every bad-data case (one line naming file and byte offset, exit 3), and exactness
// against the mnist_idx source on the real MNIST test set.
#include <zlib.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/exit_policy.h"
#include "data/dataset.h"
#include "data/mnist_source.h"
#include "data/source.h"
#include "data/source_spec.h"
#include "image/image.h"
#include "testing/temp_dir.h"
#include "tfrecord/tfrecord_writer.h"

namespace ringtrain::data {
namespace {

using json = nlohmann::json;
using ringtrain::testing::ExampleBuilder;
using ringtrain::testing::RecordOffset;
using ringtrain::testing::TempDir;
using ringtrain::testing::WriteTfRecord;

// A record of a 2x3x1 raw image whose pixels are id, id+1, ... and label `label`.
std::string RawRecord(int id, int64_t label) {
  std::string px;
  for (int p = 0; p < 6; ++p) px.push_back(static_cast<char>(id + p));
  return ExampleBuilder().Bytes("image/raw", px).Int64("label", {label}).Serialize();
}

json RawEntry(const json& files) {
  return {{"format", "tfrecord"},
          {"files", files},
          {"features",
           {{"image", {{"key", "image/raw"}, {"encoding", "raw_uint8"}, {"shape", {2, 3, 1}}}},
            {"label", {{"key", "label"}}}}}};
}

std::unique_ptr<Source> OpenAll(const json& entry, const std::string& dir, std::vector<int64_t> files = {}) {
  auto format = ParseTfRecord(entry, dir, "data.train");
  EXPECT_TRUE(format.ok()) << format.status().ToString();
  if (!format.ok()) return nullptr;
  if (files.empty()) {
    for (int64_t f = 0; f < (*format)->num_files(); ++f) files.push_back(f);
  }
  auto source = (*format)->Open(files);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  return source.ok() ? std::move(*source) : nullptr;
}

// The first pixel of each example (= its id) and the labels, in Source order.
std::vector<int> Ids(const Source& s, std::vector<int32_t>* labels = nullptr) {
  std::vector<int> ids;
  std::vector<float> x(s.spec().size());
  for (int64_t i = 0; i < s.size(); ++i) {
    int32_t label = -1;
    const Status st = s.Read(i, x.data(), &label);
    EXPECT_TRUE(st.ok()) << st.ToString();
    ids.push_back(static_cast<int>(x[0] * 255.f + 0.5f));
    if (labels) labels->push_back(label);
  }
  return ids;
}

void ExpectDataError(const Status& s, const std::string& text) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.subject(), Subject::kData) << s.ToString();
  EXPECT_EQ(ExitCodeFor(s), 3);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

void ExpectConfigError(const json& entry, const std::string& text) {
  auto f = ParseTfRecord(entry, "/tmp", "data.train");
  ASSERT_FALSE(f.ok()) << entry.dump();
  EXPECT_EQ(ExitCodeFor(f.status()), 2) << f.status().ToString();
  EXPECT_NE(f.status().message().find(text), std::string::npos) << f.status().message();
}

// Four shards, written out of order, records id = 10 * file + k.
class ShardedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int f : {2, 0, 3, 1}) {
      std::vector<std::string> records;
      for (int k = 0; k < 3 + f; ++k) records.push_back(RawRecord(10 * f + k, f));
      WriteTfRecord(Path(f), records);
    }
  }
  std::string Path(int f) const { return dir_.path() + "/train-0000" + std::to_string(f) + "-of-00004.tfrecord"; }
  TempDir dir_;
};

TEST_F(ShardedFiles, GlobIsSortedAndListKeepsItsOrder) {
  auto format = ParseTfRecord(RawEntry("train-*-of-*.tfrecord"), dir_.path(), "data.train");
  ASSERT_TRUE(format.ok()) << format.status().ToString();
  ASSERT_EQ((*format)->num_files(), 4);
  for (int f = 0; f < 4; ++f) EXPECT_EQ((*format)->FileName(f), "train-0000" + std::to_string(f) + "-of-00004.tfrecord");
  EXPECT_EQ((*format)->format(), "tfrecord");

  auto listed = ParseTfRecord(RawEntry({"train-00003-of-00004.tfrecord", Path(1)}), dir_.path(), "data.train");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)->FileName(0), "train-00003-of-00004.tfrecord");
  EXPECT_EQ((*listed)->FileName(1), "train-00001-of-00004.tfrecord");
  auto source = OpenAll(RawEntry({"train-00003-of-00004.tfrecord", Path(1)}), dir_.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(Ids(*source), (std::vector<int>{30, 31, 32, 33, 34, 35, 10, 11, 12, 13}));
}

TEST_F(ShardedFiles, ReadsAllFilesInOrderWithWhere) {
  auto source = OpenAll(RawEntry("train-*-of-*.tfrecord"), dir_.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->size(), 3 + 4 + 5 + 6);
  EXPECT_EQ(source->spec().shape, (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(source->spec().num_classes, 4);  // inferred: the largest label + 1
  EXPECT_FALSE(source->spec().categorical);
  std::vector<int32_t> labels;
  const auto ids = Ids(*source, &labels);
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 10, 11, 12, 13, 20, 21, 22, 23, 24, 30, 31, 32, 33, 34, 35}));
  EXPECT_EQ(labels[4], 1);
  auto l = source->Label(17);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, 3);
  const std::vector<std::string> recs{RawRecord(20, 2), RawRecord(21, 2), RawRecord(22, 2)};
  EXPECT_EQ(source->Where(10), "train-00002-of-00004.tfrecord record 3 (byte " +
                                   std::to_string(RecordOffset(recs, 3)) + ")");
  // The raw values are x / 255.f exactly.
  std::vector<float> x(6);
  int32_t label;
  ASSERT_TRUE(source->Read(5, x.data(), &label).ok());
  for (int p = 0; p < 6; ++p) EXPECT_EQ(x[p], static_cast<float>(12 + p) / 255.f);
}

// FILE sharding: worker k of n opens files k, k + n, ...; num_classes still comes from
// every file, so that all workers build the same model.
TEST_F(ShardedFiles, FileShardingOpensTheWorkersFiles) {
  auto format = ParseTfRecord(RawEntry("train-*-of-*.tfrecord"), dir_.path(), "data.train");
  ASSERT_TRUE(format.ok());
  const int n = 3;
  std::vector<std::vector<int>> want = {{0, 1, 2, 30, 31, 32, 33, 34, 35}, {10, 11, 12, 13}, {20, 21, 22, 23, 24}};
  for (int k = 0; k < n; ++k) {
    std::vector<int64_t> files;
    for (int64_t j = k; j < (*format)->num_files(); j += n) files.push_back(j);
    auto source = (*format)->Open(files);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    EXPECT_EQ(Ids(**source), want[static_cast<size_t>(k)]) << "worker " << k;
    EXPECT_EQ((*source)->spec().num_classes, 4) << "worker " << k;
  }
}

// Read from several threads at once (each thread its own parse state) gives what one
// thread reads.
TEST_F(ShardedFiles, ParallelReadsAgree) {
  auto source = OpenAll(RawEntry("train-*-of-*.tfrecord"), dir_.path());
  ASSERT_TRUE(source);
  const std::vector<int> want = Ids(*source);
  std::vector<std::vector<int>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int pass = 0; pass < 50; ++pass) got[t] = Ids(*source);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST_F(ShardedFiles, NoMatchIsNotFoundNamingThePattern) {
  auto f = ParseTfRecord(RawEntry("eval-*.tfrecord"), dir_.path(), "data.train");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Code::kNotFound);
  EXPECT_EQ(ExitCodeFor(f.status()), 3);
  EXPECT_NE(f.status().message().find("data.train.files: no file matches '" + dir_.path() + "/eval-*.tfrecord'"),
            std::string::npos)
      << f.status().message();
  // A plain path that is missing fails at Open, naming it.
  auto g = ParseTfRecord(RawEntry("missing.tfrecord"), dir_.path(), "data.train");
  ASSERT_TRUE(g.ok());
  auto s = (*g)->Open({0});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s.status()), 3);
  EXPECT_NE(s.status().message().find("missing.tfrecord"), std::string::npos);
}

TEST_F(ShardedFiles, NumClassesLabelModeAndRescale) {
  json e = RawEntry(Path(3));
  e["features"]["label"]["num_classes"] = 10;
  e["label_mode"] = "categorical";
  e["rescale"] = 2.0;
  auto source = OpenAll(e, dir_.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->spec().num_classes, 10);
  EXPECT_TRUE(source->spec().categorical);
  std::vector<float> x(6);
  int32_t label;
  ASSERT_TRUE(source->Read(1, x.data(), &label).ok());
  EXPECT_EQ(x[0], 62.f);  // 31 * 2
  EXPECT_EQ(label, 3);

  e["features"]["label"]["num_classes"] = 3;  // labels of file 3 are 3
  source = OpenAll(e, dir_.path());
  ASSERT_TRUE(source);
  ExpectDataError(source->Read(0, x.data(), &label), "record 0: label 3 is not below num_classes 3");
}

TEST(TfRecordSourceTest, GzipAndFloatFeatures) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 5; ++i) records.push_back(ExampleBuilder().Floats("x", {i * 0.5f, -1.f}).Int64("y", {i}).Serialize());
  WriteTfRecord(dir.path() + "/f.tfrecord.gz", records, tfrecord::Compression::kGzip);
  json e = {{"format", "tfrecord"}, {"files", "f.tfrecord.gz"}, {"compression_type", "GZIP"},
            {"features", {{"image", {{"key", "x"}, {"encoding", "float"}, {"shape", {2}}}}, {"label", {{"key", "y"}}}}},
            {"first", 1}, {"count", 2}};
  auto source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  ASSERT_EQ(source->size(), 5);
  EXPECT_EQ(source->spec().num_classes, 5);
  float x[2];
  int32_t label;
  ASSERT_TRUE(source->Read(3, x, &label).ok());
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], -1.f);
  EXPECT_EQ(label, 3);
}

// features.label with a shape, as tf.io.FixedLenFeature: an int64_list of exactly that many
// labels (num_classes the largest + 1 over them all), or float targets from a float_list;
// a count or kind other than the shape's, a non-finite target, and num_classes for float
// labels are refused.
TEST(TfRecordSourceTest, LabelsOfAShapeAsInt64OrFloat32) {
  TempDir dir;
  std::vector<std::string> records;
  for (int i = 0; i < 3; ++i) {
    records.push_back(ExampleBuilder()
                          .Floats("x", {i * 1.0f})
                          .Int64("multi", {i, 0, 2 * i})
                          .Floats("target", {i * 0.25f, -1.5f})
                          .Serialize());
  }
  WriteTfRecord(dir.path() + "/f.tfrecord", records);
  auto entry = [](const json& label) {
    return json{{"format", "tfrecord"}, {"files", "f.tfrecord"},
                {"features", {{"image", {{"key", "x"}, {"encoding", "float"}, {"shape", {1}}}}, {"label", label}}}};
  };
  auto multi = OpenAll(entry({{"key", "multi"}, {"shape", {3}}}), dir.path());
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->spec().label_size(), 3u);
  EXPECT_EQ(multi->spec().num_classes, 5);
  EXPECT_FALSE(multi->spec().float_targets);
  float x;
  int32_t labels[3];
  ASSERT_TRUE(multi->Read(2, &x, labels).ok());
  EXPECT_EQ(std::vector<int32_t>(labels, labels + 3), (std::vector<int32_t>{2, 0, 4}));
  EXPECT_EQ(*multi->Label(2), 2);

  auto target = OpenAll(entry({{"key", "target"}, {"shape", {2}}, {"dtype", "float32"}}), dir.path());
  ASSERT_TRUE(target);
  EXPECT_TRUE(target->spec().float_targets);
  EXPECT_EQ(target->spec().num_classes, 0);
  ASSERT_TRUE(target->Read(1, &x, labels).ok());
  float t[2];
  std::memcpy(t, labels, sizeof(t));
  EXPECT_EQ(t[0], 0.25f);
  EXPECT_EQ(t[1], -1.5f);

  auto wrong_count = ParseTfRecord(entry({{"key", "multi"}, {"shape", {2}}, {"num_classes", 5}}), dir.path(), "data.train");
  ASSERT_TRUE(wrong_count.ok());
  auto opened = (*wrong_count)->Open({0});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ExpectDataError((*opened)->Read(0, &x, labels), "feature \"multi\" has 3 values but features.label.shape needs 2");
  auto wrong_kind = ParseTfRecord(entry({{"key", "multi"}, {"shape", {3}}, {"dtype", "float32"}}), dir.path(), "data.train");
  ASSERT_TRUE(wrong_kind.ok());
  opened = (*wrong_kind)->Open({0});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ExpectDataError((*opened)->Read(0, &x, labels), "features.label.dtype \"float32\" needs a float_list");
  auto float_classes = ParseTfRecord(entry({{"key", "target"}, {"dtype", "float32"}, {"num_classes", 3}}), dir.path(),
                                     "data.train");
  ASSERT_FALSE(float_classes.ok());
  EXPECT_NE(float_classes.status().message().find("float32 labels are targets, not classes"), std::string::npos);
  auto bad_dtype = ParseTfRecord(entry({{"key", "target"}, {"dtype", "float64"}}), dir.path(), "data.train");
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_NE(bad_dtype.status().message().find("must be \"int64\""), std::string::npos);
}

TEST(TfRecordSourceTest, BadRecordsGiveOneLineWithFileAndOffset) {
  TempDir dir;
  std::vector<std::string> records = {
      RawRecord(0, 0),
      ExampleBuilder().Bytes("image/raw", std::string(5, 'a')).Int64("label", {1}).Serialize(),  // 5 bytes, not 6
      ExampleBuilder().Bytes("img", "abcdef").Int64("label", {1}).Int64("id", {4}).Serialize(),  // key missing
      ExampleBuilder().Int64("image/raw", {1}).Int64("label", {1}).Serialize(),                  // wrong kind
      ExampleBuilder().Bytes("image/raw", "abcdef").Bytes("label", "cat").Serialize(),           // bytes label
      ExampleBuilder().Bytes("image/raw", "abcdef").Int64("label", {-2}).Serialize(),           // negative
      "not an example \xff\xff\xff",
  };
  WriteTfRecord(dir.path() + "/bad.tfrecord", records);
  json e = RawEntry("bad.tfrecord");
  e["features"]["label"]["num_classes"] = 2;  // no label scan at Open: each record fails on Read
  auto source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  std::vector<float> x(6);
  int32_t label;
  auto at = [&](int r) { return "bad.tfrecord: byte " + std::to_string(RecordOffset(records, r)) + ": record " + std::to_string(r) + ": "; };
  EXPECT_TRUE(source->Read(0, x.data(), &label).ok());
  ExpectDataError(source->Read(1, x.data(), &label), at(1) + "feature \"image/raw\" has 5 bytes but shape needs 6");
  ExpectDataError(source->Read(2, x.data(), &label),
                  at(2) + "no feature \"image/raw\"; the record has \"id\", \"img\", \"label\"");
  ExpectDataError(source->Read(3, x.data(), &label), at(3) + "feature \"image/raw\" is int64_list");
  ExpectDataError(source->Read(4, x.data(), &label), at(4) + "feature \"label\" is bytes_list");
  ExpectDataError(source->Label(5).status(), at(5) + "label -2 is negative");
  ExpectDataError(source->Read(6, x.data(), &label), at(6) + "the record is not a serialized tf.train.Example");

  // Without num_classes the scan at Open meets the first bad label.
  auto scanned = ParseTfRecord(RawEntry("bad.tfrecord"), dir.path(), "data.train");
  ASSERT_TRUE(scanned.ok());
  ExpectDataError((*scanned)->Open({0}).status(), at(4) + "feature \"label\" is bytes_list");

  // A corrupt framing fails at Open, naming the offset.
  std::string stream = WriteTfRecord(dir.path() + "/x", records);
  stream[RecordOffset(records, 3) + 8] ^= 1;
  ringtrain::testing::WriteBytes(dir.path() + "/bad.tfrecord", stream);
  auto format = ParseTfRecord(e, dir.path(), "data.train");
  ASSERT_TRUE(format.ok());
  ExpectDataError((*format)->Open({0}).status(), "bad.tfrecord: byte " + std::to_string(RecordOffset(records, 3)) +
                                                     ": record length CRC mismatch");
}

TEST(TfRecordSourceTest, ConfigErrors) {
  json e = RawEntry("x.tfrecord");
  e["colour_mode"] = "rgb";
  ExpectConfigError(e, "data.train.colour_mode: unknown key");
  e = RawEntry("x.tfrecord");
  e["compression_type"] = "gzip";
  ExpectConfigError(e, "data.train.compression_type: must be \"\", \"GZIP\" or \"ZLIB\"");
  e = RawEntry("x.tfrecord");
  e["features"]["image"].erase("shape");
  ExpectConfigError(e, "data.train.features.image.shape: missing");
  e = RawEntry("x.tfrecord");
  e["image_size"] = {4, 4};
  ExpectConfigError(e, "data.train.image_size: applies to encoded images only");
  e = RawEntry("x.tfrecord");
  e["features"]["image"]["encoding"] = "webp";
  ExpectConfigError(e, "data.train.features.image.encoding: must be");
  e = RawEntry("x.tfrecord");
  e["label_mode"] = "binary";
  ExpectConfigError(e, "data.train.label_mode");
  e = RawEntry(json::array());
  ExpectConfigError(e, "data.train.files: must be a path, a glob or a non-empty list");
  e = {{"format", "tfrecord"}};
  ExpectConfigError(e, "data.train.files: missing");
  e = {{"format", "tfrecord"}, {"files", "a"}, {"color_mode", "cmyk"}};
  ExpectConfigError(e, "data.train.color_mode: must be \"grayscale\", \"rgb\" or \"rgba\"");
  e = {{"format", "tfrecord"}, {"files", "a"}, {"interpolation", "lanczos9"}};
  ExpectConfigError(e, "data.train.interpolation");
}

// A PNG (8-bit grayscale or RGB, no filter) written by hand with zlib.
std::string Png(int w, int h, int channels, const std::vector<uint8_t>& px) {
  auto chunk = [](const std::string& type, const std::string& data) {
    std::string c;
    for (int i = 3; i >= 0; --i) c.push_back(static_cast<char>((data.size() >> (8 * i)) & 0xff));
    const std::string body = type + data;
    c += body;
    const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
    for (int i = 3; i >= 0; --i) c.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    return c;
  };
  auto be32 = [](uint32_t v) {
    std::string s;
    for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return s;
  };
  std::string ihdr = be32(static_cast<uint32_t>(w)) + be32(static_cast<uint32_t>(h));
  ihdr += std::string{8, static_cast<char>(channels == 1 ? 0 : 2), 0, 0, 0};
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);
    raw.append(reinterpret_cast<const char*>(px.data()) + static_cast<size_t>(y) * w * channels,
               static_cast<size_t>(w) * channels);
  }
  return "\x89PNG\r\n\x1a\n" + chunk("IHDR", ihdr) +
         chunk("IDAT", ringtrain::testing::Deflate(raw, tfrecord::Compression::kZlib)) + chunk("IEND", "");
}

TEST(TfRecordSourceTest, EncodedImagesAsImageFolderDecodesThem) {
  TempDir dir;
  std::vector<std::string> records, pngs;
  for (int i = 0; i < 3; ++i) {
    std::vector<uint8_t> px(8 * 6 * 3);
    for (size_t p = 0; p < px.size(); ++p) px[p] = static_cast<uint8_t>(p * 7 + i * 40);
    pngs.push_back(Png(6, 8, 3, px));
    records.push_back(ExampleBuilder().Bytes("image/encoded", pngs.back()).Int64("image/class/label", {i}).Serialize());
  }
  WriteTfRecord(dir.path() + "/png.tfrecord", records);
  json e = {{"format", "tfrecord"}, {"files", "png.tfrecord"}, {"image_size", {4, 3}}, {"color_mode", "grayscale"},
            {"features", {{"image", {{"key", "image/encoded"}, {"encoding", "png"}}}}}};
  auto source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->spec().shape, (std::vector<int>{4, 3, 1}));
  std::vector<float> x(12), want(12);
  int32_t label;
  const Status st = source->Read(2, x.data(), &label);
  if (st.code() == Code::kUnimplemented) GTEST_SKIP() << "image decoding not built: " << st.ToString();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(label, 2);
  auto img = image::Decode(reinterpret_cast<const uint8_t*>(pngs[2].data()), pngs[2].size(), 1, 4, 3);
  ASSERT_TRUE(img.ok());
  image::Resize(*img, 4, 3, image::Interpolation::kBilinear, false, want.data());
  EXPECT_EQ(x, want);

  // Without image_size the images keep the first one's size.
  e.erase("image_size");
  source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->spec().shape, (std::vector<int>{8, 6, 1}));

  // encoding "jpeg" for PNG bytes says what they are.
  e["features"]["image"]["encoding"] = "jpeg";
  e["image_size"] = {4, 3};
  source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  ExpectDataError(source->Read(0, x.data(), &label), "feature \"image/encoded\" is not a JPEG image (it looks like PNG)");
}

std::string MnistDir() {
  const char* src = std::getenv("RINGTRAIN_SOURCE_DIR");
  return std::string(src ? src : RINGTRAIN_TEST_SOURCE_DIR) + "/../shared/data/mnist";
}

// Reads every example of `source` and counts those that differ (bits or label) from
// the mnist_idx source's examples 0..7999 in `want`.
int Mismatches(const Source& source, const Dataset& want) {
  EXPECT_EQ(source.size(), 8000);
  std::vector<float> x(784);
  int mismatched = 0;
  for (int64_t i = 0; i < source.size() && i < 8000; ++i) {
    int32_t label = -1;
    const Status st = source.Read(i, x.data(), &label);
    EXPECT_TRUE(st.ok()) << st.ToString();
    const float* w = want.images.data() + i * 784;
    if (!st.ok() || std::memcmp(x.data(), w, 784 * sizeof(float)) != 0 ||
        label != want.labels[static_cast<size_t>(i)]) {
      ++mismatched;
    }
  }
  return mismatched;
}

// The exactness check: a TFRecord of MNIST t10k examples 0..7999 (raw uint8 28x28x1 +
// label, in IDX order, split over 3 files) reads as exactly the floats and labels the
// mnist_idx source loads.
TEST(TfRecordSourceTest, MnistBitForBitAsMnistIdx) {
  const std::string mnist = MnistDir();
  if (!std::filesystem::exists(mnist + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no MNIST in " << mnist;
  const json idx = {{"format", "mnist_idx"}, {"images", "t10k-images-idx3-ubyte.gz"},
                    {"labels", "t10k-labels-idx1-ubyte.gz"}, {"count", 8000}};
  auto spec = ParseSourceSpec(idx, mnist, "data.train");
  ASSERT_TRUE(spec.ok());
  auto raw = LoadMnistFiles(*spec, {0});
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  auto want = LoadShard(idx, mnist, ShardPolicy::kOff, 0, 1, "data.train");
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(want->data.size(), 8000u);

  TempDir dir;
  const int per_file = 8000 / 3 + 1;
  for (int f = 0; f < 3; ++f) {
    std::vector<std::string> records;
    for (int i = f * per_file; i < std::min(8000, (f + 1) * per_file); ++i) {
      const std::string px(reinterpret_cast<const char*>(raw->pixels.data()) + static_cast<size_t>(i) * 784, 784);
      records.push_back(ExampleBuilder().Bytes("image/raw", px).Int64("image/class/label", {raw->labels[i]}).Serialize());
    }
    WriteTfRecord(dir.path() + "/mnist-0000" + std::to_string(f) + "-of-00003.tfrecord", records);
  }
  json e = {{"format", "tfrecord"}, {"files", "mnist-*-of-00003.tfrecord"},
            {"features", {{"image", {{"key", "image/raw"}, {"encoding", "raw_uint8"}, {"shape", {28, 28, 1}}}}}}};
  auto source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->spec().num_classes, 10);
  EXPECT_EQ(Mismatches(*source, want->data), 0);
}

// The shipped converter (deploy/mnist_to_tfrecord.py: framing, Example encoding and
// CRC-32C by hand in Python) writes files this reader takes, with the same values.
TEST(TfRecordSourceTest, ShippedConverterWritesWhatTheReaderReads) {
  const std::string mnist = MnistDir();
  if (!std::filesystem::exists(mnist + "/t10k-images-idx3-ubyte.gz")) GTEST_SKIP() << "no MNIST in " << mnist;
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir;
  const std::string script = std::string(RINGTRAIN_TEST_SOURCE_DIR) + "/deploy/mnist_to_tfrecord.py";  // this tree's
  const std::string cmd = "/usr/bin/python3 " + script + " " + mnist + "/t10k-images-idx3-ubyte.gz " + mnist +
                          "/t10k-labels-idx1-ubyte.gz " + dir.path() +
                          "/train --count 8000 --shards 2 --compression GZIP > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json idx = {{"format", "mnist_idx"}, {"images", "t10k-images-idx3-ubyte.gz"},
                    {"labels", "t10k-labels-idx1-ubyte.gz"}, {"count", 8000}};
  auto want = LoadShard(idx, mnist, ShardPolicy::kOff, 0, 1, "data.train");
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  json e = {{"format", "tfrecord"}, {"files", "train-*-of-00002.tfrecord"}, {"compression_type", "GZIP"},
            {"features", {{"image", {{"key", "image/raw"}, {"encoding", "raw_uint8"}, {"shape", {28, 28}}}}}}};
  auto source = OpenAll(e, dir.path());
  ASSERT_TRUE(source);
  EXPECT_EQ(source->spec().shape, (std::vector<int>{28, 28}));
  EXPECT_EQ(Mismatches(*source, want->data), 0);
}

}  // namespace
}  // namespace ringtrain::data
