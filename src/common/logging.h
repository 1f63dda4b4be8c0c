// Minimal glog-style logging to stderr: RT_LOG(INFO) << "text";
// Thread-safe: each message is written with one write(2) call (to each destination).
// With a log file (SetLogFile) every message goes to the file, and to stderr only at or
// above the console level (SetConsoleLogLevel): `ringtrain launch` keeps INFO in one file
// per task and shows only warnings and errors, as TensorFlow's users expect.
#pragma once

#include <sstream>
#include <string>

#include "common/status.h"

namespace ringtrain {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// The minimum level printed; from RINGTRAIN_LOG_LEVEL (DEBUG|INFO|WARNING|ERROR), default INFO.
LogLevel MinLogLevel();
void SetMinLogLevel(LogLevel level);
// Appends every message to `path` as well (created, mode 0644; its directory must
// exist). Call once at start-up, before threads start. An error (about kConfig) names
// the file when it cannot be opened.
Status SetLogFile(const std::string& path);
// Messages below `level` do not go to stderr (they still go to the log file). Default:
// every message goes to stderr. Call before threads start.
void SetConsoleLogLevel(LogLevel level);
// A tag printed in every line, e.g. "worker:1". Set once at start-up, before threads start.
void SetLogTag(const std::string& tag);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();  // writes the line; never throws
  std::ostringstream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Turns the stream expression into void for the ?: in RT_LOG. `&` binds more loosely
// than `<<` and more tightly than `?:`.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace ringtrain

#define RT_LOG_LEVEL_DEBUG ::ringtrain::LogLevel::kDebug
#define RT_LOG_LEVEL_INFO ::ringtrain::LogLevel::kInfo
#define RT_LOG_LEVEL_WARNING ::ringtrain::LogLevel::kWarning
#define RT_LOG_LEVEL_ERROR ::ringtrain::LogLevel::kError

// glog's trick: a single expression, so that `if (x) RT_LOG(INFO) << y; else ...` is safe.
#define RT_LOG(level)                                                  \
  (RT_LOG_LEVEL_##level < ::ringtrain::MinLogLevel())                  \
      ? (void)0                                                        \
      : ::ringtrain::LogVoidify() &                                    \
            ::ringtrain::LogMessage(RT_LOG_LEVEL_##level, __FILE__, __LINE__).stream()
