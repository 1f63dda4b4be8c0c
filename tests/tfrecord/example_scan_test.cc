// The fast scan agrees with protobuf's parse: the same features whenever it answers,
// and no answer (false) for the forms it leaves to protobuf.
#include "tfrecord/example_scan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tfrecord/example_parse.h"
#include "tfrecord_writer.h"

namespace ringtrain::tfrecord {
namespace {

using ringtrain::testing::ExampleBuilder;
using Kind = ScannedFeature::Kind;

// When the scan answers, protobuf parses the bytes and finds the same features.
void ExpectAgrees(const std::string& bytes, const std::vector<std::string>& keys, bool want_answer = true) {
  std::vector<ScannedFeature> found(keys.size());
  const bool answered = ScanExample(bytes, keys.data(), keys.size(), found.data());
  EXPECT_EQ(answered, want_answer);
  if (!answered) return;
  auto ex = ParseExample(bytes);
  ASSERT_TRUE(ex.ok()) << "the scan accepted bytes protobuf refuses";
  for (size_t k = 0; k < keys.size(); ++k) {
    SCOPED_TRACE(keys[k]);
    const auto& map = (*ex)->features().feature();
    const auto it = map.find(keys[k]);
    if (it == map.end()) {
      EXPECT_EQ(found[k].kind, Kind::kMissing);
      continue;
    }
    const tensorflow::Feature& f = it->second;
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList:
        ASSERT_EQ(found[k].kind, Kind::kBytes);
        ASSERT_EQ(found[k].count, f.bytes_list().value_size());
        if (found[k].count > 0) {
          EXPECT_EQ(found[k].bytes, f.bytes_list().value(0));
        }
        break;
      case tensorflow::Feature::kFloatList:
        ASSERT_EQ(found[k].kind, Kind::kFloat);
        ASSERT_EQ(found[k].count, f.float_list().value_size());
        if (found[k].floats != nullptr) {
          EXPECT_EQ(std::memcmp(found[k].floats, f.float_list().value().data(), 4 * found[k].count), 0);
        }
        break;
      case tensorflow::Feature::kInt64List:
        ASSERT_EQ(found[k].kind, Kind::kInt64);
        ASSERT_EQ(found[k].count, f.int64_list().value_size());
        if (found[k].count > 0) {
          EXPECT_EQ(found[k].first_int, f.int64_list().value(0));
        }
        break;
      default:
        EXPECT_EQ(found[k].kind, Kind::kEmpty);
    }
  }
}

TEST(ExampleScanTest, AgreesWithProtobufOnWrittenExamples) {
  std::mt19937 rng(11);
  for (int t = 0; t < 200; ++t) {
    ExampleBuilder b;
    std::string raw(rng() % 2000, '\0');
    for (auto& c : raw) c = static_cast<char>(rng());
    b.Bytes("image/raw", raw).Int64("label", {static_cast<int64_t>(rng() % 1000) - 3, 5});
    if (t % 3 == 0) b.Floats("x", {1.f, -0.5f, static_cast<float>(t)});
    if (t % 4 == 0) b.Bytes("other", "o").Bytes("other", "p");
    if (t % 5 == 0) b.Int64("big", {INT64_MIN, INT64_MAX, -1});
    ExpectAgrees(b.Serialize(), {"image/raw", "label", "x", "big", "other", "absent"});
  }
  ExpectAgrees("", {"a"});  // an empty Example: every key missing
}

TEST(ExampleScanTest, LeavesUnusualFormsToProtobuf) {
  const std::string ok = ExampleBuilder().Int64("label", {3}).Serialize();
  // Two Example.features fields: protobuf merges them.
  ExpectAgrees(ok + ok, {"label"}, false);
  // A non-ASCII key: proto3 checks its UTF-8.
  ExpectAgrees(ExampleBuilder().Int64("l\xc3\xa9", {3}).Serialize(), {"label"}, false);
  // Truncated and garbage bytes.
  ExpectAgrees(ok.substr(0, ok.size() - 1), {"label"}, false);
  ExpectAgrees("\x0a\x05\x0a\x03\x0a\x01", {"label"}, false);
  // A tag or a length spelled in six varint bytes (a padded, non-canonical encoding):
  // protobuf reads both in at most five bytes and refuses the message (found by fuzzing).
  for (const std::string& padded : {std::string("\xa8\x8a\xf3\x8a\x8a\x00\x08\x01", 8),
                                    std::string("\x0a\x80\x80\x80\x80\x80\x00", 7)}) {
    EXPECT_FALSE(ParseExample(padded).ok());
    ExpectAgrees(padded, {"label"}, false);
  }
  // An unknown field (number 7, varint) in the Example is skipped, as protobuf keeps it aside.
  ExpectAgrees(ok + std::string("\x38\x01", 2), {"label"});
  // Unpacked int64 values (wire type 0), which protobuf also accepts.
  // (built by appending: gcc 12 warns falsely (-Wrestrict) on "..." + a temporary string)
  auto field = [](char tag, const std::string& payload) {
    std::string out(1, tag);
    out.push_back(static_cast<char>(payload.size()));
    out += payload;
    return out;
  };
  const std::string list = "\x08\x07\x08\x09";  // Int64List.value = 7, 9 unpacked
  std::string entry = field('\x0a', "k");             // key
  entry += field('\x12', field('\x1a', list));        // value: Feature.int64_list
  const std::string example = field('\x0a', field('\x0a', entry));
  ExpectAgrees(example, {"k"});
  ScannedFeature f;
  const std::string key = "k";
  ASSERT_TRUE(ScanExample(example, &key, 1, &f));
  EXPECT_EQ(f.first_int, 7);
  EXPECT_EQ(f.count, 2);
}

}  // namespace
}  // namespace ringtrain::tfrecord
