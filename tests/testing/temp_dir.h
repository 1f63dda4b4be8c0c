// A fresh directory under $TMPDIR (or /tmp) for one test: removed at the end of a
// passing test, kept for inspection after a failing one. Shared by every test binary.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ringtrain::testing {

inline std::string MakeTempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ringtrain_test.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  EXPECT_NE(mkdtemp(buf.data()), nullptr);
  return buf.data();
}

class TempDir {
 public:
  TempDir() : path_(MakeTempDir()) {}
  ~TempDir() {
    if (!::testing::Test::HasFailure()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// "'path'", as error messages quote paths (built by appending: gcc 12 warns falsely
// (-Wrestrict) on "'" + a temporary string).
inline std::string Quoted(const std::string& path) {
  std::string s = "'";
  s += path;
  s += "'";
  return s;
}

}  // namespace ringtrain::testing
