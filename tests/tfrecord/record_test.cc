// TFRecord framing byte for byte, and the reader's checks.
#include "tfrecord/record.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tfrecord/crc32c.h"
#include "testing/temp_dir.h"
#include "tfrecord_writer.h"

namespace ringtrain::tfrecord {
namespace {

std::string Hex(const std::string& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

using ringtrain::testing::WriteBytes;

TEST(RecordTest, FramesAKnownRecordByteForByte) {
  // Expected bytes computed with a bit-at-a-time CRC-32C outside this code base:
  // length 5 | masked crc 0x3e04b2ea | "hello" | masked crc 0x191c1fbb.
  EXPECT_EQ(Hex(FrameRecord("hello")), "0500000000000000" "eab2043e" "68656c6c6f" "bb1f1c19");
  // Empty data: the data CRC is mask(0).
  EXPECT_EQ(Hex(FrameRecord("")), "0000000000000000" "29039807" "d8ea82a2");
}

TEST(RecordTest, LengthHeaderMatchesTensorFlowEventFiles) {
  // Every TensorFlow event file starts with a 24-byte file-version event, whose header
  // reads 18 00 00 00 00 00 00 00 a3 7f 4b 22.
  EXPECT_EQ(Hex(FrameRecord(std::string(24, 'x')).substr(0, 12)), "1800000000000000a37f4b22");
}

TEST(RecordTest, ParsesWhatItFrames) {
  const std::vector<std::string> in = {"", "a", std::string(1000, '\0'), "brain.Event:2"};
  std::string bytes;
  for (const auto& r : in) bytes += FrameRecord(r);
  std::vector<std::string> out;
  ASSERT_TRUE(ParseRecords(bytes, &out).ok());
  EXPECT_EQ(out, in);
  ASSERT_TRUE(ParseRecords("", &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(RecordTest, EveryFlippedByteIsDataLoss) {
  const std::string good = FrameRecord("abc") + FrameRecord("defgh");
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    std::vector<std::string> out;
    const Status s = ParseRecords(bad, &out);
    EXPECT_EQ(s.code(), Code::kDataLoss) << "byte " << i;
    const size_t record_start = i < 19 ? 0 : 19;  // the first record is 3 + 16 bytes
    EXPECT_NE(s.message().find("offset " + std::to_string(record_start)), std::string::npos) << s.message();
    EXPECT_EQ(out.size(), record_start == 0 ? 0u : 1u);
  }
}

TEST(RecordTest, EveryTruncationIsDataLoss) {
  const std::string good = FrameRecord("abc") + FrameRecord("defgh");
  for (size_t n = 1; n < good.size(); ++n) {
    if (n == 19) continue;  // a whole first record: a valid, shorter file
    std::vector<std::string> out;
    const Status s = ParseRecords(good.substr(0, n), &out);
    EXPECT_EQ(s.code(), Code::kDataLoss) << "length " << n;
    EXPECT_NE(s.message().find(n < 19 ? "offset 0" : "offset 19"), std::string::npos) << s.message();
  }
}

TEST(RecordTest, HugeLengthIsDataLossNotAnAllocation) {
  // A length field of 2^63 with a valid length CRC: the reader must find the file too
  // short rather than trust the length.
  std::string header(8, '\0');
  header[7] = static_cast<char>(0x80);
  const uint32_t crc = MaskCrc(Crc32c(header.data(), header.size()));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((crc >> (8 * i)) & 0xFF));
  std::vector<std::string> out;
  const Status s = ParseRecords(FrameRecord("abc") + header + "xyz", &out);
  EXPECT_EQ(s.code(), Code::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("truncated record at byte offset 19"), std::string::npos) << s.message();
  EXPECT_EQ(out, std::vector<std::string>{"abc"});
}

TEST(RecordTest, ReadRecordsNamesThePath) {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/events";
  WriteBytes(path, FrameRecord("one") + FrameRecord("two"));
  std::vector<std::string> out;
  ASSERT_TRUE(ReadRecords(path, &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"one", "two"}));

  WriteBytes(path, FrameRecord("one").substr(0, 5));
  const Status s = ReadRecords(path, &out);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();

  EXPECT_EQ(ReadRecords(tmp.path() + "/missing", &out).code(), Code::kNotFound);
}

}  // namespace
}  // namespace ringtrain::tfrecord
