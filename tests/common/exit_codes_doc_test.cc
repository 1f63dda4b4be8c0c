// docs/reference/exit-codes.md's table against the codes of common/exit_codes.h.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/exit_codes.h"
#include "common/exit_policy.h"
#include "testing/doc_table.h"
#include "testing/source_dir.h"

namespace ringtrain {
namespace {

constexpr char kDoc[] = "docs/reference/exit-codes.md";

// The codes the documentation's main table lists ("0".."7", "128+N").
std::set<std::string> DocumentedCodes(const std::string& markdown) {
  std::set<std::string> codes;
  for (const auto& row : ::ringtrain::testing::TableRows(markdown, std::regex("[0-9]+|128\\+N"))) {
    codes.insert(row[0]);
  }
  return codes;
}

std::vector<std::string> Differences(const std::set<std::string>& documented) {
  std::set<std::string> code_side = {"128+N"};
  for (int c : kAllExitCodes) code_side.insert(std::to_string(c));
  std::vector<std::string> problems;
  for (const std::string& c : code_side) {
    if (!documented.count(c)) problems.push_back("exit code " + c + " (" + ExitCodeMeaning(c == "128+N" ? 143 : std::stoi(c)) +
                                                 ") has no row in " + kDoc);
  }
  for (const std::string& c : documented) {
    if (!code_side.count(c)) problems.push_back(std::string(kDoc) + " documents exit code " + c + ", which is not in common/exit_codes.h");
  }
  return problems;
}

TEST(ExitCodesDocTest, TheTableListsExactlyTheCodes) {
  const std::string doc = ::ringtrain::testing::ReadSourceFile(kDoc);
  ASSERT_FALSE(doc.empty()) << kDoc << " is missing";
  for (const std::string& p : Differences(DocumentedCodes(doc))) ADD_FAILURE() << p;
}

TEST(ExitCodesDocTest, ARemovedOrExtraRowIsFound) {
  std::set<std::string> all = {"128+N"};
  for (int c : kAllExitCodes) all.insert(std::to_string(c));
  EXPECT_TRUE(Differences(all).empty());
  auto missing = all;
  missing.erase("6");
  ASSERT_EQ(Differences(missing).size(), 1u);
  EXPECT_NE(Differences(missing)[0].find("exit code 6 (storage error"), std::string::npos);
  auto extra = all;
  extra.insert("9");
  ASSERT_EQ(Differences(extra).size(), 1u);
  EXPECT_NE(Differences(extra)[0].find("documents exit code 9"), std::string::npos);
  EXPECT_EQ(DocumentedCodes("| code | meaning |\n|---|---|\n| 0 | success |\n| 128+N | killed |\n| x | y |\n"),
            (std::set<std::string>{"0", "128+N"}));
}

TEST(ExitCodesDocTest, TheListIsTheEnum) {
  EXPECT_EQ(std::size(kAllExitCodes), 8u);
  EXPECT_EQ(kAllExitCodes[0], kExitOk);
  EXPECT_EQ(kAllExitCodes[7], kExitPreempted);
}

}  // namespace
}  // namespace ringtrain
