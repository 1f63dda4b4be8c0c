// CRC-32C against RFC 3720's test vectors, and TFRecord's mask.
#include "summary/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ringtrain::summary {
namespace {

TEST(Crc32cTest, Rfc3720Vectors) {
  std::vector<uint8_t> buf(32, 0x00);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x8A9136AAu);
  buf.assign(32, 0xFF);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(buf.data(), buf.size()), 0x113FDB5Cu);
  // The iSCSI SCSI Read (10) command PDU of RFC 3720 B.4.
  const uint8_t read_pdu[48] = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
      0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(Crc32c(read_pdu, sizeof(read_pdu)), 0xD9963A56u);
}

TEST(Crc32cTest, CheckValueAndEmpty) {
  const std::string s = "123456789";
  EXPECT_EQ(Crc32c(s.data(), s.size()), 0xE3069283u);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, ExtendEqualsOneShot) {
  const std::string s = "The quick brown fox jumps over the lazy dog";
  const uint32_t whole = Crc32c(s.data(), s.size());
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut), whole) << cut;
  }
  EXPECT_EQ(whole, 0x22620404u);
}

TEST(Crc32cTest, MaskMatchesTensorFlowAndRoundTrips) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  const std::string s = "123456789";
  // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8, modulo 2^32.
  EXPECT_EQ(MaskedCrc32c(s.data(), s.size()), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
  for (uint32_t c : {0u, 1u, 0x8A9136AAu, 0xFFFFFFFFu, 0x12345678u}) {
    EXPECT_EQ(UnmaskCrc(MaskCrc(c)), c);
    EXPECT_NE(MaskCrc(c), c);
  }
}

}  // namespace
}  // namespace ringtrain::summary
