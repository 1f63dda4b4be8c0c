// Where the checkout is, for tests that read committed files (fixtures, corpora):
// $RINGTRAIN_TEST_SOURCE_DIR when set (CI's clean clone, a moved build tree), else the
// source directory CMake compiled in.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ringtrain::testing {

inline std::string TestSourceDir() {
  const char* env = std::getenv("RINGTRAIN_TEST_SOURCE_DIR");
  return env && *env ? env : RINGTRAIN_TEST_SOURCE_DIR;
}

// The whole of <checkout>/relative_path; empty when it cannot be read (the caller's
// assertions then fail naming it).
inline std::string ReadSourceFile(const std::string& relative_path) {
  std::ifstream in(TestSourceDir() + "/" + relative_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ringtrain::testing
