// Where log lines go besides stderr (common/logging.h): with a log file every message
// goes to the file, and to stderr only at or above the console level. `ringtrain
// launch` keeps INFO in one file per task and shows only warnings and errors.
// Threading: call both before threads start; logging itself stays thread-safe (one
// write(2) per message and destination). Implemented in logging.cc.
#pragma once

#include <string>

#include "common/logging.h"
#include "common/status.h"

namespace ringtrain {

// Appends every message to `path` as well (created, mode 0644; its directory must
// exist). An error (about kConfig) names the file when it cannot be opened.
Status SetLogFile(const std::string& path);
// Messages below `level` do not go to stderr (they still go to the log file). Default:
// every message goes to stderr.
void SetConsoleLogLevel(LogLevel level);
// With `plain`, a message on stderr is "WARNING: <message>" (ERROR, INFO, DEBUG), as
// Python's logging and TensorFlow print it, without the time, task and source position
// that the log file keeps. Default: stderr gets the log file's line.
void SetConsoleLogPlain(bool plain);

}  // namespace ringtrain
