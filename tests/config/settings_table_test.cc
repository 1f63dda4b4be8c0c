// docs/reference/settings.md's table against config::SettingTable(), and the sources
// against both: every RINGTRAIN_* variable that any file of src/ or worker/ names in a
// string is in the table (so read through config/settings.cc), and the table and the
// documentation name the same variables with the same defaults.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "config/settings.h"
#include "testing/doc_table.h"
#include "testing/source_dir.h"

namespace ringtrain::config {
namespace {

using ::ringtrain::testing::ReadSourceFile;
using ::ringtrain::testing::TableRows;
using ::ringtrain::testing::Unquoted;

constexpr char kDoc[] = "docs/reference/settings.md";

// name -> default, as the documentation's table gives them.
std::map<std::string, std::string> DocumentedSettings(const std::string& markdown) {
  std::map<std::string, std::string> out;
  for (const auto& row : TableRows(markdown, std::regex("`RINGTRAIN_[A-Z0-9_]+`"))) {
    out[Unquoted(row[0])] = row.size() > 1 ? Unquoted(row[1]) : "";
  }
  return out;
}

// What differs between the documentation's rows and the code's table, one line each.
std::vector<std::string> Differences(const std::map<std::string, std::string>& documented) {
  std::vector<std::string> problems;
  std::set<std::string> known;
  for (const SettingInfo& s : SettingTable()) {
    const std::string name(s.name);
    known.insert(name);
    auto it = documented.find(name);
    if (it == documented.end()) {
      problems.push_back(name + " is read by ringtrain but has no row in " + kDoc);
    } else if (it->second != s.default_text) {
      problems.push_back(name + ": " + kDoc + " says the default is '" + it->second + "', the code '" +
                         std::string(s.default_text) + "'");
    }
  }
  for (const auto& [name, unused] : documented) {
    if (!known.count(name)) problems.push_back(std::string(kDoc) + " names " + name + ", which no code reads");
  }
  return problems;
}

// RINGTRAIN_* names in the string literals of `source` that are not in the table
// (a name after "-D" is a CMake option, not a variable).
std::vector<std::string> UnknownVariables(const std::string& source) {
  std::set<std::string> known;
  for (const SettingInfo& s : SettingTable()) known.insert(std::string(s.name));
  std::vector<std::string> unknown;
  const std::regex name("(-D)?(RINGTRAIN_[A-Z0-9_]*[A-Z0-9])");
  for (const std::string& lit : ::ringtrain::testing::StringLiterals(source)) {
    for (auto it = std::sregex_iterator(lit.begin(), lit.end(), name); it != std::sregex_iterator(); ++it) {
      if ((*it)[1].matched) continue;
      if (!known.count((*it)[2].str())) unknown.push_back((*it)[2].str());
    }
  }
  return unknown;
}

TEST(SettingsTableTest, TheDocumentationListsExactlyTheTable) {
  const std::string doc = ReadSourceFile(kDoc);
  ASSERT_FALSE(doc.empty()) << kDoc << " is missing";
  for (const std::string& p : Differences(DocumentedSettings(doc))) ADD_FAILURE() << p;
}

TEST(SettingsTableTest, ARemovedOrExtraRowIsFound) {
  std::map<std::string, std::string> documented;
  for (const SettingInfo& s : SettingTable()) documented[std::string(s.name)] = std::string(s.default_text);
  EXPECT_TRUE(Differences(documented).empty());
  auto missing = documented;
  missing.erase("RINGTRAIN_LOG_LEVEL");
  ASSERT_EQ(Differences(missing).size(), 1u);
  EXPECT_NE(Differences(missing)[0].find("RINGTRAIN_LOG_LEVEL is read by ringtrain but has no row"), std::string::npos);
  auto extra = documented;
  extra["RINGTRAIN_NO_SUCH_THING"] = "1";
  ASSERT_EQ(Differences(extra).size(), 1u);
  EXPECT_NE(Differences(extra)[0].find("names RINGTRAIN_NO_SUCH_THING, which no code reads"), std::string::npos);
  auto wrong = documented;
  wrong["RINGTRAIN_CHUNK_BYTES"] = "1024";
  EXPECT_EQ(Differences(wrong).size(), 1u);
  // The parser reads the documentation's own row format.
  const auto rows = DocumentedSettings("| variable | default | meaning |\n|---|---|---|\n"
                                       "| `RINGTRAIN_KERNELS` | `auto` | `portable` \\| auto |\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.at("RINGTRAIN_KERNELS"), "auto");
}

TEST(SettingsTableTest, EverySourceNamesOnlyVariablesOfTheTable) {
  const std::string root = ::ringtrain::testing::TestSourceDir();
  size_t files = 0;
  for (const char* dir : {"src", "worker"}) {
    for (const std::string& f : ::ringtrain::testing::SourceFiles(root, dir)) {
      ++files;
      for (const std::string& v : UnknownVariables(ReadSourceFile(f))) {
        ADD_FAILURE() << f << " names " << v << ", which is not in config::SettingTable() (src/config/settings.cc): "
                      << "read every RINGTRAIN_* variable there and document it in " << kDoc;
      }
      // Only config/settings.cc calls getenv on a RINGTRAIN_* name.
      if (f != "src/config/settings.cc") {
        const std::string text = ReadSourceFile(f);
        EXPECT_FALSE(std::regex_search(text, std::regex(R"(getenv\s*\(\s*"RINGTRAIN_)"))) << f;
      }
    }
  }
  EXPECT_GT(files, 100u);
  // The scan finds a variable read anywhere else, and skips comments and CMake options.
  EXPECT_EQ(UnknownVariables("auto v = std::getenv(\"RINGTRAIN_NEW_KNOB\");"),
            std::vector<std::string>{"RINGTRAIN_NEW_KNOB"});
  EXPECT_TRUE(UnknownVariables("// RINGTRAIN_IN_A_COMMENT\nconst char* m = \"-DRINGTRAIN_CUDA=ON\";").empty());
}

TEST(SettingsTableTest, ProcessSettingsAndTheClusterSecretComeFromTheEnvironment) {
  ::setenv("RINGTRAIN_LOG_LEVEL", "ERROR", 1);
  ::setenv("RINGTRAIN_KERNELS", "portable", 1);
  ::setenv("RINGTRAIN_CONV_ALGO", "sideways", 1);
  std::vector<std::string> warnings;
  ProcessSettings p = LoadProcessSettings(&warnings);
  EXPECT_EQ(p.log_level, "ERROR");
  EXPECT_EQ(p.kernels, "portable");
  EXPECT_EQ(p.conv_algo, "auto");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("RINGTRAIN_CONV_ALGO=sideways is not one of auto, direct"), std::string::npos);
  ::unsetenv("RINGTRAIN_LOG_LEVEL");
  ::unsetenv("RINGTRAIN_KERNELS");
  ::unsetenv("RINGTRAIN_CONV_ALGO");
  p = LoadProcessSettings(&warnings);
  EXPECT_EQ(p.log_level, "INFO");
  EXPECT_EQ(p.kernels, "auto");

  ::unsetenv("RINGTRAIN_CLUSTER_SECRET");
  ::unsetenv("RINGTRAIN_CLUSTER_SECRET_FILE");
  EXPECT_FALSE(LoadClusterSecretSource().value.has_value());
  EXPECT_FALSE(LoadClusterSecretSource().file.has_value());
  ::setenv("RINGTRAIN_CLUSTER_SECRET_FILE", "/etc/ringtrain/secret", 1);
  EXPECT_EQ(LoadClusterSecretSource().file, std::optional<std::string>("/etc/ringtrain/secret"));
  ::unsetenv("RINGTRAIN_CLUSTER_SECRET_FILE");
}

}  // namespace
}  // namespace ringtrain::config
