// What a task and `ringtrain launch` print, and where their log lines go.
//
// Where a task's log lines go, from its flags (`ringtrain worker --log_file F [--verbose]`,
// which `ringtrain launch` passes to each task): every line to the file; to stderr only
// warnings and errors unless --verbose. Without --log_file everything goes to stderr, as
// for any hand-started task. Call once, before threads start.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "console/line_mux.h"
#include "flags.h"

namespace ringtrain::cli {

// The flags this adds to `ringtrain worker`.
inline constexpr const char* kLogFileFlag = "log_file";
inline constexpr const char* kVerboseFlag = "verbose";

// An error (about kConfig) when the file cannot be opened.
Status SetUpTaskLogging(const Flags& flags);

struct LocalClusterOptions;  // local_cluster.h

// What `ringtrain launch` shows, from its flags (--output default|all, -v/--verbose,
// --log_dir DIR; `job` is the --job path, whose directory holds logs/ by default):
// sets `options`' echo, per-task arguments (--log_file DIR/<task>.log, --verbose) and
// environment (the chief streams its progress bar when `console` is a terminal), and
// whether launch announces itself. Creates the log directory. An error (about kConfig)
// for a bad --output or a log directory that cannot be made.
// `log_dir` receives the directory of the tasks' log files.
Status ConfigureLaunchOutput(const Flags& flags, bool verbose, const std::string& job, console::LineMux* console,
                             LocalClusterOptions* options, std::string* log_dir);

// Removes "-v" (before any "--") from `args`; true if it was there.
bool TakeShortVerbose(std::vector<std::string>* args);

}  // namespace ringtrain::cli
