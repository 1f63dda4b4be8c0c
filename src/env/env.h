// The file-system seam, as LevelDB's Env: every file ringtrain writes or reads back as
// its output -- the saved model, model checkpoints, backups, the history file,
// TensorBoard event files -- goes through an Env, so that a test can put a
// FaultInjectionEnv (tests/testing/fault_injection_env.h) in its place and make any
// call fail (a full disk, EIO on fsync, a failed rename, a crash between two files).
//
// The Env is passed explicitly, as LevelDB's Options::env: a field of
// train::TrainerOptions and recovery::RunOptions, a parameter of the backup, checkpoint,
// history and summary functions, defaulting to Default() (the POSIX file system).
//
// Errors: every call returns a Status whose message names the path and carries errno's
// text, with common's ErrnoError codes: NOT_FOUND (ENOENT), RESOURCE_EXHAUSTED (ENOSPC,
// EDQUOT, EFBIG), PERMISSION_DENIED (EROFS, EACCES, EPERM), INVALID_ARGUMENT (EISDIR,
// ENOTDIR), INTERNAL (EIO and the rest). The Env does not tag what a failure concerns
// (Status::About): the library that knows what the file is (backup, checkpoint,
// history, summary) does, so that a data reader using an Env could still say kData.
//
// Threading: an Env's methods may be called from any thread at once. A WritableFile is
// used by one thread at a time. Blocking: every call blocks on the local file system
// (bounded by the disk; there is no peer to wait for).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ringtrain::env {

// A file open for writing. Append hands the bytes to the file system before it
// returns (the POSIX one keeps no buffer of its own, so a process killed after
// Append loses nothing the kernel has); Sync makes them durable (fsync). The
// destructor closes a file that is still open, without Sync, and never throws.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(std::string_view data) = 0;
  // Pushes anything buffered to the file system (a no-op for the POSIX file, which
  // buffers nothing; wrappers may buffer).
  virtual Status Flush() = 0;
  // Flush, then fsync: after OK the bytes survive a power cut.
  virtual Status Sync() = 0;
  // Flush and close. Every later call fails with FAILED_PRECONDITION.
  virtual Status Close() = 0;
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // Creates `dir` and any missing parents; OK when it already is a directory.
  virtual Status CreateDirectories(const std::string& dir) = 0;
  // Creates `path` (or truncates an existing file) for writing. The directory must exist.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Creates `path`, which must not exist: FAILED_PRECONDITION if anything is there
  // (so that two writers never share a file).
  virtual StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) = 0;
  // Atomically replaces `to` with `from` (rename(2): both in one file system).
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // NOT_FOUND if there is no such file.
  virtual Status DeleteFile(const std::string& path) = 0;
  // Removes an empty directory: FAILED_PRECONDITION if it is not empty, NOT_FOUND if
  // it is not there.
  virtual Status DeleteDir(const std::string& dir) = 0;
  // The names (not paths) of the entries of `dir`, without "." and "..", sorted.
  virtual StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // Whether anything is at `path` (false for a missing path or a missing parent); an
  // error when the file system cannot tell (EACCES on a parent, EIO), never a guess.
  virtual StatusOr<bool> FileExists(const std::string& path) = 0;
  // Whether `path` is a directory (following symbolic links); false when missing.
  virtual StatusOr<bool> IsDirectory(const std::string& path) = 0;
  // fsync of the directory itself: makes the renames and creations in it durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // The whole file (common's ReadFile for the POSIX Env).
  virtual StatusOr<std::string> ReadFile(const std::string& path) = 0;
};

// The POSIX file system. Process-wide and never destroyed, so that it outlives every
// object holding it (e.g. a background writer still running at exit).
Env* Default();

// Forwards every call to another Env, as LevelDB's EnvWrapper: a test subclasses it and
// overrides the one call it wants to change. `target` is not owned and must outlive it.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Status CreateDirectories(const std::string& dir) override { return target_->CreateDirectories(dir); }
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return target_->NewWritableFile(path);
  }
  StatusOr<std::unique_ptr<WritableFile>> NewExclusiveFile(const std::string& path) override {
    return target_->NewExclusiveFile(path);
  }
  Status RenameFile(const std::string& from, const std::string& to) override { return target_->RenameFile(from, to); }
  Status DeleteFile(const std::string& path) override { return target_->DeleteFile(path); }
  Status DeleteDir(const std::string& dir) override { return target_->DeleteDir(dir); }
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return target_->GetChildren(dir);
  }
  StatusOr<bool> FileExists(const std::string& path) override { return target_->FileExists(path); }
  StatusOr<bool> IsDirectory(const std::string& path) override { return target_->IsDirectory(path); }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  StatusOr<std::string> ReadFile(const std::string& path) override { return target_->ReadFile(path); }

 private:
  Env* target_;
};

}  // namespace ringtrain::env
