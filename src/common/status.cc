#include "common/status.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ringtrain {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kAborted: return "ABORTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kDataLoss: return "DATA_LOSS";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

const char* SubjectName(Subject subject) {
  switch (subject) {
    case Subject::kUnknown: return "unknown";
    case Subject::kConfig: return "config";
    case Subject::kData: return "data";
    case Subject::kCluster: return "cluster";
    case Subject::kPeers: return "peers";
    case Subject::kStorage: return "storage";
  }
  return "unknown";
}

std::string Status::OneLine(std::string message) {
  const auto is_control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::none_of(message.begin(), message.end(), is_control)) return message;
  std::string out;
  out.reserve(message.size() + 16);
  for (char c : message) {
    if (!is_control(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  return Status(code_, context + ": " + message_, subject_);
}

Status Status::About(Subject subject) const {
  if (ok() || subject_ != Subject::kUnknown) return *this;
  return Status(code_, message_, subject);
}

Status ErrnoError(const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err);
  switch (err) {
    case ENOENT: return NotFoundError(msg);
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ETIMEDOUT: return UnavailableError(msg);
    case EACCES:
    case EPERM:
    case EROFS: return PermissionDeniedError(msg);
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
    case EMFILE:
    case ENFILE: return ResourceExhaustedError(msg);
    case EISDIR:
    case ENOTDIR: return FailedPreconditionError(msg);
    default: return InternalError(msg);
  }
}

}  // namespace ringtrain
