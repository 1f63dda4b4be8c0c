// One job's child process on a daemon (`ringtrain worker` for the job's task): started
// with its own environment, working directory and output file, in its own process group
// (a terminal's Ctrl-C reaches the daemon, which forwards it once), and killed by the
// kernel if the daemon's thread that started it dies (PR_SET_PDEATHSIG), so that a daemon
// killed mid-job leaves no orphan holding the job's ports.
//
// Threading: one owner thread; Signal may be called from any thread. Destruction kills
// and reaps a child that still runs; never throws.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ringtrain::daemon {

struct ChildSpec {
  std::string exe;                 // absolute path
  std::vector<std::string> args;   // after argv[0]
  std::vector<std::pair<std::string, std::string>> env;  // set on top of this process's
  std::string cwd;
  std::string output_path;         // stdout and stderr, appended
};

class JobChild {
 public:
  static StatusOr<std::unique_ptr<JobChild>> Start(const ChildSpec& spec);
  ~JobChild();
  JobChild(const JobChild&) = delete;
  JobChild& operator=(const JobChild&) = delete;

  // Its exit code once it has ended (128+signal if killed), without blocking.
  std::optional<int> Poll();
  void Signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  explicit JobChild(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::optional<int> exit_code_;
};

// The last line of `output` that reads "ringtrain...: error: ..." (what a failing
// command prints), without the prefix; "" if none. Reads at most the last 64 KiB.
std::string LastErrorLine(const std::string& output_path);

}  // namespace ringtrain::daemon
