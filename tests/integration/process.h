// Runs the ringtrain binary as a child process for multi-process tests, with a
// deadline: a child still running at its deadline is killed (and the test fails).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/temp_dir.h"

namespace ringtrain::testing {

struct ProcessResult {
  int exit_code = -1;     // 128+signal if killed
  bool timed_out = false;
  std::string output;     // stdout and stderr, interleaved
};

class Process {
 public:
  // Starts `binary args...` with extra environment variables (others inherited).
  Process(const std::string& binary, const std::vector<std::string>& args,
          const std::map<std::string, std::string>& env = {});
  ~Process();  // kills the child if it still runs; never throws
  // Waits up to timeout_s, then kills the child.
  ProcessResult Wait(double timeout_s);
  // Reads output until it contains `text` (true) or timeout_s passes / the child
  // ends (false). What was read stays part of the result's output.
  bool WaitForOutput(const std::string& text, double timeout_s);
  void Kill(int sig);
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int fd_ = -1;
  std::string output_;
  bool done_ = false;
  ProcessResult result_;
};

// The ringtrain binary under test (RINGTRAIN_BINARY, set by ctest).
std::string RingtrainBinary();
// The repository's root (RINGTRAIN_SOURCE_DIR, set by ctest).
std::string SourceDir();
std::string ReadFileOrEmpty(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
// A JSON-lines file (e.g. the history), one object per non-empty line; empty if missing.
std::vector<nlohmann::json> ReadJsonLines(const std::string& path);
// A process's output split into lines (without the newlines).
std::vector<std::string> Lines(const std::string& text);
// How many times `needle` occurs in `haystack` (overlapping occurrences count).
size_t Count(const std::string& haystack, const std::string& needle);
// Distinct free TCP ports on 127.0.0.1.
std::vector<int> FreePorts(int n);
// The launcher's child running task `index` (its TF_CONFIG names it; with `launch
// --processes`, the process whose first task it is), waiting up to timeout_s; -1 if none.
pid_t FindLaunchedTask(pid_t launcher, int index, double timeout_s);

}  // namespace ringtrain::testing
