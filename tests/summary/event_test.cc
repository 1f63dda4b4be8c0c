// The hand-encoded Events, decoded by protobuf's generated code for an independent
// copy of TensorFlow's schema (event_test.proto).
#include "summary/event.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "event_test.pb.h"

namespace ringtrain::summary {
namespace {

ringtrain_test::Event Decode(const std::string& bytes) {
  ringtrain_test::Event e;
  EXPECT_TRUE(e.ParseFromString(bytes));
  return e;
}

TEST(EventTest, FileVersionEvent) {
  const std::string bytes = EncodeFileVersionEvent(1700000000.25);
  const auto e = Decode(bytes);
  EXPECT_EQ(e.wall_time(), 1700000000.25);
  EXPECT_EQ(e.step(), 0);
  EXPECT_EQ(e.file_version(), "brain.Event:2");
  EXPECT_FALSE(e.has_summary());
  // 9 bytes of wall_time + 2 + 13 of file_version: the 24-byte record TF files start with.
  EXPECT_EQ(bytes.size(), 24u);
  std::string canonical;
  ASSERT_TRUE(e.SerializeToString(&canonical));
  EXPECT_EQ(bytes, canonical);
}

TEST(EventTest, ScalarEventDecodes) {
  const Scalars values = {{"epoch_loss", 0.6931f}, {"epoch_accuracy", 0.0f}, {"learning_rate", -1.5e-3f}};
  const std::string bytes = EncodeScalarEvent(1712345678.5, 7, values);
  const auto e = Decode(bytes);
  EXPECT_EQ(e.wall_time(), 1712345678.5);
  EXPECT_EQ(e.step(), 7);
  EXPECT_TRUE(e.file_version().empty());
  ASSERT_TRUE(e.has_summary());
  ASSERT_EQ(e.summary().value_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const auto& v = e.summary().value(i);
    EXPECT_EQ(v.tag(), values[i].first);
    // Zero too must be present: TensorBoard reads simple_value from the oneof.
    ASSERT_EQ(v.value_case(), ringtrain_test::Value::kSimpleValue) << v.tag();
    EXPECT_EQ(v.simple_value(), values[i].second);
  }
  std::string canonical;
  ASSERT_TRUE(e.SerializeToString(&canonical));
  EXPECT_EQ(bytes, canonical);
}

TEST(EventTest, StepsAndValuesAtTheEdges) {
  for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{127}, int64_t{128}, int64_t{-1},
                       std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    const auto e = Decode(EncodeScalarEvent(1.0, step, {{"x", 1.0f}}));
    EXPECT_EQ(e.step(), step);
  }
  const float inf = std::numeric_limits<float>::infinity();
  const auto e = Decode(EncodeScalarEvent(2.0, 3,
                                          {{"inf", inf}, {"nan", std::nanf("")}, {"tiny", 1e-45f}, {"neg0", -0.0f}}));
  ASSERT_EQ(e.summary().value_size(), 4);
  EXPECT_EQ(e.summary().value(0).simple_value(), inf);
  EXPECT_TRUE(std::isnan(e.summary().value(1).simple_value()));
  EXPECT_EQ(e.summary().value(2).simple_value(), 1e-45f);
  EXPECT_TRUE(std::signbit(e.summary().value(3).simple_value()));
}

TEST(EventTest, LongTagsAndManyValues) {
  Scalars values;
  for (int i = 0; i < 300; ++i) values.push_back({std::string(200 + i, static_cast<char>('a' + i % 26)), i * 0.5f});
  const auto e = Decode(EncodeScalarEvent(3.0, 9, values));
  ASSERT_EQ(e.summary().value_size(), 300);
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(e.summary().value(i).tag(), values[i].first);
    EXPECT_EQ(e.summary().value(i).simple_value(), values[i].second);
  }
}

}  // namespace
}  // namespace ringtrain::summary
