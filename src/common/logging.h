// Minimal glog-style logging to stderr: RT_LOG(INFO) << "text";
// Thread-safe: each message is written with one write(2) call.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace ringtrain {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// The minimum level printed; default INFO. The ringtrain executable sets it from
// RINGTRAIN_LOG_LEVEL (config::LoadProcessSettings) before any command runs.
LogLevel MinLogLevel();
void SetMinLogLevel(LogLevel level);
// "DEBUG", "INFO", "WARNING" or "ERROR" as a level; INFO for anything else.
LogLevel ParseLogLevel(std::string_view name);
// A tag printed in every line, e.g. "worker:1". Set once at start-up, before threads start.
void SetLogTag(const std::string& tag);
// The tag of the lines the calling thread writes, in place of the process's (a process
// hosting several tasks runs each on its own thread: `worker --host_tasks`); empty: the
// process's tag again. Threads the calling thread starts keep the process's tag.
void SetThreadLogTag(const std::string& tag);

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
