#include "env/file_util.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/logging.h"

namespace ringtrain::env {

std::string TemporaryPathFor(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

bool IsTemporaryName(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0 || at + 5 == name.size()) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + 5), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

namespace {

Status WriteAndRename(Env* env, const std::string& path, const std::string& bytes) {
  if (path.empty()) return InvalidArgumentError("cannot write a file with an empty path");
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  RT_RETURN_IF_ERROR(env->CreateDirectories(dir).WithContext("writing '" + path + "'"));
  const std::string tmp = TemporaryPathFor(path);
  StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(tmp);
  if (!file.ok()) return file.status();
  Status s = (*file)->Append(bytes);
  if (s.ok()) s = (*file)->Sync();
  if (s.ok()) s = (*file)->Close();
  if (s.ok()) s = env->RenameFile(tmp, path);
  if (!s.ok()) {
    file->reset();  // closed before it is deleted
    const Status removed = env->DeleteFile(tmp);
    if (!removed.ok() && removed.code() != Code::kNotFound) {
      RT_LOG(WARNING) << "could not remove the temporary file: " << removed.message();
    }
    return s;
  }
  // The data is in place; only the rename's durability across a power cut is in doubt.
  return env->SyncDir(dir).WithContext("wrote '" + path + "' but cannot make it durable");
}

}  // namespace

Status WriteFileAtomically(Env* env, const std::string& path, const std::string& bytes) {
  return WriteAndRename(env, path, bytes).About(Subject::kStorage);
}

Status DeleteRecursively(Env* env, const std::string& dir) {
  // unlink(2) first: it removes a file or a symbolic link (never following it, so a
  // link to another directory never has that directory's contents deleted) and fails
  // with EISDIR (FAILED_PRECONDITION, common's ErrnoError) only for a real directory.
  const Status unlinked = env->DeleteFile(dir);
  if (unlinked.ok() || unlinked.code() == Code::kNotFound) return Status::Ok();
  if (unlinked.code() != Code::kFailedPrecondition) return unlinked;
  RT_ASSIGN_OR_RETURN(std::vector<std::string> children, env->GetChildren(dir));
  for (const std::string& name : children) {
    RT_RETURN_IF_ERROR(DeleteRecursively(env, (std::filesystem::path(dir) / name).string()));
  }
  return env->DeleteDir(dir);
}

}  // namespace ringtrain::env
