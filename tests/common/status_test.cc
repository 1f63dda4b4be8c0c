#include "common/status.h"

#include <gtest/gtest.h>

namespace ringtrain {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  RT_ASSIGN_OR_RETURN(int h, Half(x));
  RT_ASSIGN_OR_RETURN(*out, Half(h));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status().ok());
  Status s = NotFoundError("no such file 'x'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no such file 'x'");
  EXPECT_EQ(s.WithContext("loading data").message(), "loading data: no such file 'x'");
}

// Whatever a message quotes (a JSON key with a newline, a file name with a terminal
// escape), it stays one line.
TEST(StatusTest, MessagesAreOneLine) {
  Status s = InvalidArgumentError("unknown field 'a\nb'\t\x1b[31m");
  EXPECT_EQ(s.message(), "unknown field 'a\\nb'\\t\\x1b[31m");
  EXPECT_EQ(s.WithContext("job\r").message(), "job\\r: unknown field 'a\\nb'\\t\\x1b[31m");
  EXPECT_EQ(InvalidArgumentError("caf\xc3\xa9 ok").message(), "caf\xc3\xa9 ok");  // UTF-8 is not control
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(12, &out).ok());
  EXPECT_EQ(out, 3);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd: 3");
}

}  // namespace
}  // namespace ringtrain
