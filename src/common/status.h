// ringtrain's one error model: a Status (code + message) and StatusOr<T>.
// gRPC, socket, zlib and file-system errors are converted to a Status at the edge
// where they happen; no exception crosses a library boundary. Every message a user
// can see says what was wrong and, where it can, what to do about it.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ringtrain {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // bad input: configuration, job file, flags
  kNotFound,            // a file or key that is not there
  kDeadlineExceeded,    // a wait ran past its deadline
  kUnavailable,         // a peer or service could not be reached
  kAborted,             // an operation was stopped by Abort() or a peer failure
  kFailedPrecondition,  // the system is not in a state that allows the call
  kDataLoss,            // corrupt or truncated data
  kPermissionDenied,    // refused by the other side (e.g. a different job), or by the file system
  kUnimplemented,       // a feature this build does not have
  kResourceExhausted,   // a disk is full, or a job would need more memory than the bound allows
  kInternal,            // a bug or an unexpected system error
};

const char* CodeName(Code code);

// What a failure concerns: together with the code it decides the process's exit code
// (common/exit_policy.h, docs/reference/exit-codes.md). The edge that knows sets it -- the
// data reader kData, the file writer kStorage, the cluster session kCluster -- with
// About(); WithContext keeps it, and About never replaces one already set, so the
// innermost edge wins ("writing the history: <disk full>" stays kStorage).
enum class Subject {
  kUnknown,  // not set: the code alone decides
  kConfig,   // TF_CONFIG, the job file, flags, settings, the cluster secret
  kData,     // the training or evaluation data files
  kCluster,  // meeting the other tasks: registration, rendezvous, forming a ring
  kPeers,    // another task failed or hung while this one trained
  kStorage,  // files this task writes or reads back: model, backups, checkpoints, history, TensorBoard
};

const char* SubjectName(Subject subject);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  // A message is one line: control characters in it (a newline in a JSON key or a
  // file name, a terminal escape) are written as escapes ("\n", "\x1b"), so that every
  // error a user sees is exactly one line, whatever the input it quotes.
  Status(Code code, std::string message, Subject subject = Subject::kUnknown)
      : code_(code), subject_(code == Code::kOk ? Subject::kUnknown : subject), message_(OneLine(std::move(message))) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  Subject subject() const { return subject_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;
  // Returns a copy whose message is "context: message" (same code and subject).
  Status WithContext(const std::string& context) const;
  // Returns a copy about `subject`, unless it is OK or already about something.
  Status About(Subject subject) const;

 private:
  static std::string OneLine(std::string message);
  Code code_ = Code::kOk;
  Subject subject_ = Subject::kUnknown;
  std::string message_;
};

inline Status InvalidArgumentError(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFoundError(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status DeadlineExceededError(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status UnavailableError(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status AbortedError(std::string m) { return {Code::kAborted, std::move(m)}; }
inline Status FailedPreconditionError(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
inline Status DataLossError(std::string m) { return {Code::kDataLoss, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status UnimplementedError(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status ResourceExhaustedError(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
inline Status InternalError(std::string m) { return {Code::kInternal, std::move(m)}; }
// "what: strerror(errno)" with a code chosen from errno: NOT_FOUND (ENOENT), UNAVAILABLE
// (connection errors), PERMISSION_DENIED (EACCES, EPERM, EROFS), RESOURCE_EXHAUSTED
// (ENOSPC, EDQUOT, EFBIG, ENOMEM, and EMFILE, ENFILE: out of descriptors),
// FAILED_PRECONDITION (EISDIR, ENOTDIR: the path names
// something that is not what it must be), else INTERNAL.
Status ErrnoError(const std::string& what, int err);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : v_(status) { assert(!status.ok()); }  // NOLINT: implicit by design
  StatusOr(Status&& status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  StatusOr(const T& value) : v_(value) {}  // NOLINT
  StatusOr(T&& value) : v_(std::move(value)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace ringtrain

#define RT_CONCAT_INNER(a, b) a##b
#define RT_CONCAT(a, b) RT_CONCAT_INNER(a, b)

#define RT_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::ringtrain::Status rt_status_ = (expr);     \
    if (!rt_status_.ok()) return rt_status_;     \
  } while (0)

#define RT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// RT_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error status if MakeX() failed.
// It expands to several statements: inside an if/else, use braces.
#define RT_ASSIGN_OR_RETURN(lhs, expr) \
  RT_ASSIGN_OR_RETURN_IMPL(RT_CONCAT(rt_statusor_, __LINE__), lhs, expr)
