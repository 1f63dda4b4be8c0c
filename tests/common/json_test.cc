// ParseJson: every way outside JSON can be bad gives one INVALID_ARGUMENT line, never
// an exception; and the checked readers refuse what is not an exact value in range.
#include "common/json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace ringtrain {
namespace {

void ExpectBad(const std::string& text, const std::string& want) {
  StatusOr<nlohmann::json> r = ParseJson(text, "job");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().find("job: "), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  EXPECT_EQ(r.status().message().find("[json.exception"), std::string::npos) << r.status().message();
}

TEST(ParseJsonTest, ParsesValidJson) {
  auto r = ParseJson(R"({"a": [1, 2.5, "x", null, true], "b": {"c": -3}})", "job");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["a"][1], 2.5);
  EXPECT_EQ((*r)["b"]["c"], -3);
}

TEST(ParseJsonTest, NumbersOutOfRangeAreOneLineNotAnAbort) {
  ExpectBad(R"({"learning_rate": 1e400})", "a number is out of range");
  ExpectBad(R"({"learning_rate": -1e400})", "-1e400");
  ExpectBad("{\"seed\": " + std::string(400, '9') + "}", "a number is out of range");
  // The 400 digits are not all repeated in the message.
  auto r = ParseJson("{\"seed\": " + std::string(400, '9') + "}", "job");
  EXPECT_LT(r.status().message().size(), 400u);
}

TEST(ParseJsonTest, SyntaxErrorsSayWhere) {
  ExpectBad(R"({"a": )", "not valid JSON");
  ExpectBad("", "not valid JSON");
  ExpectBad(std::string("{\"a\": \"\xff\"}"), "not valid JSON");  // not UTF-8
  ExpectBad(R"({"a": 1} trailing)", "not valid JSON");
}

TEST(ParseJsonTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  ExpectBad(deep, "nested deeper than 128 levels");
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok, "job").ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJson("[\"" + std::string(1000, '[') + "\"]", "job").ok());
  // A million unclosed brackets: refused quickly, no stack overflow.
  ExpectBad(std::string(1000000, '['), "nested deeper");
}

TEST(JsonReadersTest, IntegersMustBeExactAndInRange) {
  using nlohmann::json;
  EXPECT_EQ(JsonInt(json(5), 1, 10), 5);
  EXPECT_EQ(JsonInt(json(0), 1, 10), std::nullopt);
  EXPECT_EQ(JsonInt(json(-5), 1, 10), std::nullopt);
  EXPECT_EQ(JsonInt(json(2.5), 0, 10), std::nullopt);
  EXPECT_EQ(JsonInt(json(3.0), 0, 10), std::nullopt);  // 3.0 is a float in JSON
  EXPECT_EQ(JsonInt(*ParseJson("1e30", "x"), 0, INT64_MAX), std::nullopt);
  EXPECT_EQ(JsonInt(*ParseJson("99999999999999999999", "x"), 0, INT64_MAX), std::nullopt);  // 20 digits: a float
  EXPECT_EQ(JsonInt(*ParseJson("18446744073709551615", "x"), 0, INT64_MAX), std::nullopt);
  EXPECT_EQ(JsonInt(json("7"), 0, 10), std::nullopt);
  EXPECT_EQ(JsonUint(*ParseJson("18446744073709551615", "x")), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(JsonUint(json(-1)), std::nullopt);
  EXPECT_EQ(JsonNumber(json(2.5)), 2.5);
  EXPECT_EQ(JsonNumber(json(std::numeric_limits<double>::infinity())), std::nullopt);
  EXPECT_EQ(JsonNumber(json("1")), std::nullopt);
  EXPECT_LE(JsonBrief(json(std::string(500, 'x'))).size(), 60u);
}

}  // namespace
}  // namespace ringtrain
