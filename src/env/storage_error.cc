#include "env/storage_error.h"

namespace ringtrain::env {

Status StorageError(const Status& status, const std::string& context, const std::string& setting) {
  if (status.ok()) return status;
  std::string remedy;
  switch (status.code()) {
    case Code::kResourceExhausted:
      remedy = "free space on that file system";
      break;
    case Code::kPermissionDenied:
      remedy = "make it writable";
      break;
    default:
      remedy = "check the path and the disk";
      break;
  }
  const std::string text = (context.empty() ? "" : context + ": ") + status.message() + "; " + remedy +
                           (setting.empty() ? "" : " or point " + setting + " elsewhere");
  return Status(status.code(), text, status.subject()).About(Subject::kStorage);
}

}  // namespace ringtrain::env
