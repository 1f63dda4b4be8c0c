#include "common/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/log_file.h"

namespace ringtrain {
namespace {

std::atomic<int>& MinLevelStorage() {
  static std::atomic<int> level{static_cast<int>(LogLevel::kInfo)};
  return level;
}

std::string& Tag() {
  static std::string tag;
  return tag;
}

std::string& ThreadTag() {
  thread_local std::string tag;
  return tag;
}

int g_log_fd = -1;  // set before threads start
std::atomic<int> g_console_level{static_cast<int>(LogLevel::kDebug)};
std::atomic<bool> g_console_plain{false};

void WriteFully(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

LogLevel MinLogLevel() { return static_cast<LogLevel>(MinLevelStorage().load(std::memory_order_relaxed)); }
void SetMinLogLevel(LogLevel level) { MinLevelStorage().store(static_cast<int>(level)); }

LogLevel ParseLogLevel(std::string_view name) {
  if (name == "DEBUG") return LogLevel::kDebug;
  if (name == "WARNING") return LogLevel::kWarning;
  if (name == "ERROR") return LogLevel::kError;
  return LogLevel::kInfo;
}
void SetLogTag(const std::string& tag) { Tag() = tag; }
void SetThreadLogTag(const std::string& tag) { ThreadTag() = tag; }

Status SetLogFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return ErrnoError("opening the log file '" + path + "' (--log_file/--log_dir: a writable file in an existing directory)",
                      errno)
        .About(Subject::kConfig);
  }
  if (g_log_fd >= 0) ::close(g_log_fd);
  g_log_fd = fd;
  return Status::Ok();
}

void SetConsoleLogLevel(LogLevel level) { g_console_level.store(static_cast<int>(level)); }
void SetConsoleLogPlain(bool plain) { g_console_plain.store(plain); }

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int micros = static_cast<int>(
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06d ", kLetters[static_cast<int>(level)],
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
  const char* base = std::strrchr(file, '/');
  stream_ << buf;
  const std::string& tag = ThreadTag().empty() ? Tag() : ThreadTag();
  if (!tag.empty()) stream_ << tag << ' ';
  stream_ << (base ? base + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  try {
    stream_ << '\n';
    std::string s = stream_.str();
    if (g_log_fd >= 0) WriteFully(g_log_fd, s);
    if (static_cast<int>(level_) >= g_console_level.load(std::memory_order_relaxed)) {
      if (g_console_plain.load(std::memory_order_relaxed)) {
        static const char* const kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
        // The header (time, task, file:line) ends at the first "] ": none of its parts holds one.
        const size_t body = s.find("] ");
        WriteFully(STDERR_FILENO, std::string(kNames[static_cast<int>(level_)]) + ": " +
                                      (body == std::string::npos ? s : s.substr(body + 2)));
      } else {
        WriteFully(STDERR_FILENO, s);
      }
    }
  } catch (...) {
    // A destructor never throws; a lost log line is the lesser harm.
  }
}

}  // namespace ringtrain
