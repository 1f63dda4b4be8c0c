#include "summary/event.h"

#include <cstring>

namespace ringtrain::summary {
namespace {

// Wire types of the protobuf encoding.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kFixed32 = 5;

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutKey(std::string* out, uint32_t field, uint32_t wire_type) { PutVarint(out, (field << 3) | wire_type); }

void PutFixed(std::string* out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xFFu));
}

void PutBytes(std::string* out, uint32_t field, const std::string& bytes) {
  PutKey(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

void PutDouble(std::string* out, uint32_t field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  if (bits == 0) return;  // proto3 omits +0.0 (but writes -0.0)
  PutKey(out, field, kFixed64);
  PutFixed(out, bits, 8);
}

void PutFloatAlways(std::string* out, uint32_t field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  PutKey(out, field, kFixed32);
  PutFixed(out, bits, 4);
}

void PutInt64(std::string* out, uint32_t field, int64_t v) {
  if (v == 0) return;
  PutKey(out, field, kVarint);
  PutVarint(out, static_cast<uint64_t>(v));  // negatives take ten bytes, as protobuf does
}

// Field numbers from tensorflow/core/util/event.proto and framework/summary.proto.
constexpr uint32_t kEventWallTime = 1;
constexpr uint32_t kEventStep = 2;
constexpr uint32_t kEventFileVersion = 3;
constexpr uint32_t kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1;
constexpr uint32_t kValueSimpleValue = 2;

}  // namespace

std::string EncodeFileVersionEvent(double wall_time, const std::string& file_version) {
  std::string out;
  PutDouble(&out, kEventWallTime, wall_time);
  if (!file_version.empty()) PutBytes(&out, kEventFileVersion, file_version);
  return out;
}

std::string EncodeScalarEvent(double wall_time, int64_t step, const Scalars& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string v;
    if (!tag.empty()) PutBytes(&v, kValueTag, tag);
    PutFloatAlways(&v, kValueSimpleValue, value);
    PutBytes(&summary, kSummaryValue, v);
  }
  std::string out;
  PutDouble(&out, kEventWallTime, wall_time);
  PutInt64(&out, kEventStep, step);
  PutBytes(&out, kEventSummary, summary);
  return out;
}

}  // namespace ringtrain::summary
