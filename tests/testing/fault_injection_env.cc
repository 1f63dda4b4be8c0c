#include "testing/fault_injection_env.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "env/file_util.h"

namespace ringtrain::testing {
namespace {

bool Matches(const std::string& glob, const std::string& path) {
  return !glob.empty() && ::fnmatch(glob.c_str(), path.c_str(), 0) == 0;
}

bool IsFinalName(const std::string& path) {
  return !env::IsTemporaryName(std::filesystem::path(path).filename().string());
}

}  // namespace

// A file written through a FaultInjectionEnv: every call asks the Env whether to fail.
class FaultFile : public env::WritableFile {
 public:
  FaultFile(FaultInjectionEnv* env, std::unique_ptr<env::WritableFile> inner, std::string path, int index,
            std::shared_ptr<FaultInjectionEnv::FileState> state)
      : env_(env), inner_(std::move(inner)), path_(std::move(path)), index_(index), state_(std::move(state)) {}

  Status Append(std::string_view data) override {
    RT_RETURN_IF_ERROR(env_->CheckCrash("write", path_));
    bool fail = false;
    const int64_t allowed = env_->AllowedBytes(path_, index_, static_cast<int64_t>(data.size()), &fail);
    if (allowed > 0) {
      RT_RETURN_IF_ERROR(inner_->Append(data.substr(0, static_cast<size_t>(allowed))));
      std::lock_guard<std::mutex> lock(env_->mu_);
      state_->size += allowed;
    }
    if (fail) return ErrnoError("cannot write '" + path_ + "'", ENOSPC);
    return Status::Ok();
  }

  Status Flush() override {
    RT_RETURN_IF_ERROR(env_->CheckCrash("flush", path_));
    return inner_->Flush();
  }

  Status Sync() override {
    RT_RETURN_IF_ERROR(env_->CheckCrash("fsync", path_));
    if (env_->SyncFails(path_)) return ErrnoError("cannot fsync '" + path_ + "'", EIO);
    RT_RETURN_IF_ERROR(inner_->Sync());
    env_->Synced(state_);
    return Status::Ok();
  }

  Status Close() override {
    RT_RETURN_IF_ERROR(env_->CheckCrash("close", path_));
    RT_RETURN_IF_ERROR(inner_->Close());
    if (IsFinalName(path_)) {
      std::lock_guard<std::mutex> lock(env_->mu_);
      env_->CompleteFileLocked(path_);
    }
    return Status::Ok();
  }

  const std::string& path() const override { return path_; }

 private:
  FaultInjectionEnv* const env_;
  std::unique_ptr<env::WritableFile> inner_;  // closed by its destructor, as a dying process's files are
  const std::string path_;
  const int index_;
  const std::shared_ptr<FaultInjectionEnv::FileState> state_;
};

void FaultInjectionEnv::FailAppendsAfterBytes(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  append_budget_ = bytes;
}

void FaultInjectionEnv::FailAppendsToFile(int k) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_file_index_ = files_created_ + k;
}

void FaultInjectionEnv::FailAppendsMatching(const std::string& glob) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_appends_glob_ = glob;
}

void FaultInjectionEnv::FailSyncsMatching(const std::string& glob) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_syncs_glob_ = glob;
}

void FaultInjectionEnv::FailRenamesMatching(const std::string& glob, int err) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_renames_glob_ = glob;
  rename_errno_ = err;
}

void FaultInjectionEnv::CrashAfterFiles(int k, bool drop_unsynced_data, const std::string& glob) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_after_ = k;
  crash_glob_ = glob;
  drop_unsynced_ = drop_unsynced_data;
  if (k <= 0) CrashLocked();
}

void FaultInjectionEnv::Heal() {
  std::lock_guard<std::mutex> lock(mu_);
  append_budget_ = -1;
  fail_file_index_ = -1;
  fail_appends_glob_.clear();
  fail_syncs_glob_.clear();
  fail_renames_glob_.clear();
  crash_after_ = -1;
  crash_glob_.clear();
  drop_unsynced_ = false;
  crashed_ = false;
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

int FaultInjectionEnv::files_completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_completed_;
}

int FaultInjectionEnv::faults_injected() const {
  std::lock_guard<std::mutex> lock(mu_);
  return faults_injected_;
}

Status FaultInjectionEnv::CheckCrash(const std::string& what, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!crashed_) return Status::Ok();
  ++faults_injected_;
  return ErrnoError("cannot " + what + " '" + path + "' (a simulated crash: the process is gone)", EIO);
}

StatusOr<std::unique_ptr<env::WritableFile>> FaultInjectionEnv::Wrap(
    StatusOr<std::unique_ptr<env::WritableFile>> file, const std::string& path) {
  if (!file.ok()) return file.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto state = std::make_shared<FileState>();
  files_[path] = state;  // a new (or truncated) file
  return std::unique_ptr<env::WritableFile>(
      new FaultFile(this, std::move(file).value(), path, ++files_created_, std::move(state)));
}

int64_t FaultInjectionEnv::AllowedBytes(const std::string& path, int index, int64_t n, bool* fail) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index == fail_file_index_ || Matches(fail_appends_glob_, path)) {
    *fail = true;
    ++faults_injected_;
    return 0;
  }
  if (append_budget_ < 0) return n;
  const int64_t allowed = std::min(n, append_budget_);
  append_budget_ -= allowed;
  if (allowed < n) {
    *fail = true;
    ++faults_injected_;
  }
  return allowed;
}

bool FaultInjectionEnv::SyncFails(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Matches(fail_syncs_glob_, path)) return false;
  ++faults_injected_;
  return true;
}

void FaultInjectionEnv::Synced(const std::shared_ptr<FileState>& state) {
  std::lock_guard<std::mutex> lock(mu_);
  state->synced = state->size;
}

void FaultInjectionEnv::CompleteFileLocked(const std::string& path) {
  ++files_completed_;
  if (crash_after_ > 0 && Matches(crash_glob_, path) && --crash_after_ == 0) {
    crash_after_ = -1;
    CrashLocked();
  }
}

void FaultInjectionEnv::CrashLocked() {
  crashed_ = true;
  if (!drop_unsynced_) return;
  // What the page cache held but the disk did not: lost with the power. Straight to
  // the file system: the target Env has no truncate, and this is the disk's doing.
  for (auto& [path, state] : files_) {
    if (state->synced < state->size && ::truncate(path.c_str(), static_cast<off_t>(state->synced)) == 0) {
      state->size = state->synced;
    }
  }
}

Status FaultInjectionEnv::CreateDirectories(const std::string& dir) {
  RT_RETURN_IF_ERROR(CheckCrash("create directory", dir));
  return target()->CreateDirectories(dir);
}

StatusOr<std::unique_ptr<env::WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("create", path));
  return Wrap(target()->NewWritableFile(path), path);
}

StatusOr<std::unique_ptr<env::WritableFile>> FaultInjectionEnv::NewExclusiveFile(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("create", path));
  return Wrap(target()->NewExclusiveFile(path), path);
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  RT_RETURN_IF_ERROR(CheckCrash("rename", from));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Matches(fail_renames_glob_, to)) {
      ++faults_injected_;
      return ErrnoError("cannot rename '" + from + "' to '" + to + "'", rename_errno_);
    }
  }
  RT_RETURN_IF_ERROR(target()->RenameFile(from, to));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(from);
  if (it != files_.end()) {
    files_[to] = it->second;
    files_.erase(from);
  } else {
    files_.erase(to);  // replaced by a file this Env did not write
  }
  if (IsFinalName(to)) CompleteFileLocked(to);
  return Status::Ok();
}

Status FaultInjectionEnv::DeleteFile(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("delete", path));
  RT_RETURN_IF_ERROR(target()->DeleteFile(path));
  std::lock_guard<std::mutex> lock(mu_);
  files_.erase(path);
  return Status::Ok();
}

Status FaultInjectionEnv::DeleteDir(const std::string& dir) {
  RT_RETURN_IF_ERROR(CheckCrash("remove directory", dir));
  return target()->DeleteDir(dir);
}

StatusOr<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir) {
  RT_RETURN_IF_ERROR(CheckCrash("list", dir));
  return target()->GetChildren(dir);
}

StatusOr<bool> FaultInjectionEnv::FileExists(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("inspect", path));
  return target()->FileExists(path);
}

StatusOr<bool> FaultInjectionEnv::IsDirectory(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("inspect", path));
  return target()->IsDirectory(path);
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  RT_RETURN_IF_ERROR(CheckCrash("fsync directory", dir));
  return target()->SyncDir(dir);
}

StatusOr<std::string> FaultInjectionEnv::ReadFile(const std::string& path) {
  RT_RETURN_IF_ERROR(CheckCrash("read", path));
  return target()->ReadFile(path);
}

}  // namespace ringtrain::testing
