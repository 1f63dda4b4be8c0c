// The subcommands of the `ringtrain` executable. Each returns a process exit code
// (common/exit_codes.h) and prints one clear line for any error.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::cli {

// `ringtrain worker --job JOB.json [--tf_config FILE|JSON]`: one task of a cluster.
int RunWorker(const std::vector<std::string>& args);
// `ringtrain launch --workers N --job JOB.json`: N local workers on loopback.
int RunLaunch(const std::vector<std::string>& args, const std::string& self_path);

// `ringtrain bench allreduce [--workers N] ...`: the all-reduce benchmark, on N local
// processes or as one task of the TF_CONFIG cluster.
int RunBench(const std::vector<std::string>& args, const std::string& self_path);

// Prints "ringtrain: error: <message>" (prefixed with the task when known) to stderr.
void PrintError(const std::string& message);
// PrintError(s's message), then returns `code`: `return Fail(kExitBadConfig, status);`.
int Fail(int code, const Status& s);

}  // namespace ringtrain::cli
