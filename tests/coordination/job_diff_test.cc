#include "coordination/job_diff.h"

#include <gtest/gtest.h>

namespace ringtrain::coordination {
namespace {

TEST(JobDiffTest, EqualJobsMatchRegardlessOfKeyOrderAndSpacing) {
  EXPECT_TRUE(CompareJobs(R"({"a": 1, "b": {"c": "x"}})", R"({"b":{"c":"x"},"a":1})", "worker:1").ok());
}

TEST(JobDiffTest, NamesTheDifferingFieldWithBothValues) {
  Status s = CompareJobs(R"({"model": "mlp", "optimizer": {"learning_rate": 0.001, "momentum": 0.9}})",
                         R"({"model": "mlp", "optimizer": {"learning_rate": 0.01, "momentum": 0.9}})", "worker:1");
  ASSERT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "worker:1's job differs from the chief's at /optimizer/learning_rate (chief: 0.001, worker:1: 0.01); "
            "start every task with the same job file");
}

TEST(JobDiffTest, MissingAndExtraFieldsAreShownAsAbsent) {
  Status missing = CompareJobs(R"({"epochs": 3, "seed": 7})", R"({"epochs": 3})", "worker:0");
  ASSERT_EQ(missing.code(), Code::kPermissionDenied);
  EXPECT_NE(missing.message().find("/seed (chief: 7, worker:0: <absent>)"), std::string::npos) << missing.message();

  Status extra = CompareJobs(R"({"epochs": 3})", R"({"epochs": 3, "seed": 7})", "worker:0");
  ASSERT_EQ(extra.code(), Code::kPermissionDenied);
  EXPECT_NE(extra.message().find("/seed (chief: <absent>, worker:0: 7)"), std::string::npos) << extra.message();
}

TEST(JobDiffTest, ArrayElementsAreNamedByIndex) {
  Status s = CompareJobs(R"({"layers": [784, 128, 10]})", R"({"layers": [784, 64, 10]})", "worker:2");
  ASSERT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_NE(s.message().find("/layers/1 (chief: 128, worker:2: 64)"), std::string::npos) << s.message();
}

TEST(JobDiffTest, InvalidJsonIsAnInvalidArgument) {
  Status s = CompareJobs(R"({"a": 1})", "{not json", "worker:1");
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("worker:1's job is not valid JSON"), std::string::npos) << s.message();
  EXPECT_EQ(ValidateJobJson("[1,", "the chief's").code(), Code::kInvalidArgument);
  EXPECT_TRUE(ValidateJobJson("{}", "the chief's").ok());
}

}  // namespace
}  // namespace ringtrain::coordination
