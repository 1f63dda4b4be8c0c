// FaultInjectionEnv: an env::EnvWrapper for tests (LevelDB's FaultInjectionTestEnv)
// that makes the file system fail the way real ones do -- a disk that fills up
// (ENOSPC), an fsync that fails (EIO), a rename that fails, and a process that dies
// between two files -- so that tests can show what every writer of ringtrain's output
// files (backups, checkpoints, the saved model, the history, TensorBoard) does then.
//
// Faults are armed by the methods below and stay armed until Heal(). Injected errors
// look like the POSIX Env's ("cannot write '<path>': No space left on device",
// RESOURCE_EXHAUSTED; "cannot fsync '<path>': Input/output error", INTERNAL), so the
// code under test cannot tell them from real ones.
//
// Crash: once it has "crashed", every call (on the Env and on files opened from it)
// fails with EIO, as if the process had died; the files stay as they are on disk, for
// a new Env (the restarted process) to find. Optionally the data written but never
// synced is dropped first (each file is truncated to its size at its last successful
// Sync), as after a power cut. A file is "completed" when it is in place under its
// final name: renamed onto it (env::WriteFileAtomically), or closed when it was written
// under its final name (not an env::IsTemporaryName file: an event file).
//
// Threading: every method may be called from any thread (a BackupWriter's thread uses
// the Env while the test arms faults). The target Env is not owned.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "env/env.h"

namespace ringtrain::testing {

class FaultInjectionEnv : public env::EnvWrapper {
 public:
  explicit FaultInjectionEnv(env::Env* target = env::Default()) : EnvWrapper(target) {}

  // Appends fail with ENOSPC once `bytes` more bytes have been appended (to any files);
  // the Append that crosses the limit writes the part that fits, then fails.
  void FailAppendsAfterBytes(int64_t bytes);
  // The k-th file created for writing from now on (1: the next one) fails every Append
  // with ENOSPC.
  void FailAppendsToFile(int k);
  // Appends to files whose path matches `glob` (fnmatch(3); '*' also matches '/') fail
  // with ENOSPC.
  void FailAppendsMatching(const std::string& glob);
  // Sync of files whose path matches `glob` fails with EIO (the data stays unsynced).
  void FailSyncsMatching(const std::string& glob = "*");
  // Renames onto a path matching `glob` fail with `err` and change nothing.
  void FailRenamesMatching(const std::string& glob = "*", int err = EIO);
  // Crashes once k more files whose path matches `glob` are completed (see above): the
  // call completing the k-th such file succeeds, every later call fails. k <= 0
  // crashes at once.
  void CrashAfterFiles(int k, bool drop_unsynced_data = false, const std::string& glob = "*");
  // Disarms every fault and undoes a crash (the files keep what the crash left).
  void Heal();

  bool crashed() const;
  // Files completed since construction.
  int files_completed() const;
  // Calls that failed because of an armed fault or the crash: a test asserts its fault fired.
  int faults_injected() const;

  Status CreateDirectories(const std::string& dir) override;
  StatusOr<std::unique_ptr<env::WritableFile>> NewWritableFile(const std::string& path) override;
  StatusOr<std::unique_ptr<env::WritableFile>> NewExclusiveFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status DeleteFile(const std::string& path) override;
  Status DeleteDir(const std::string& dir) override;
  StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  StatusOr<bool> FileExists(const std::string& path) override;
  StatusOr<bool> IsDirectory(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  StatusOr<std::string> ReadFile(const std::string& path) override;

 private:
  friend class FaultFile;
  struct FileState {  // one file written through this Env, for dropping unsynced data
    int64_t size = 0;
    int64_t synced = 0;
  };

  // OK, or the crash's error for `what` on `path`.
  Status CheckCrash(const std::string& what, const std::string& path);
  StatusOr<std::unique_ptr<env::WritableFile>> Wrap(StatusOr<std::unique_ptr<env::WritableFile>> file,
                                                    const std::string& path);
  // How many of `n` bytes an Append to `path` (the k-th file) may write; sets *fail.
  int64_t AllowedBytes(const std::string& path, int index, int64_t n, bool* fail);
  bool SyncFails(const std::string& path);
  void Synced(const std::shared_ptr<FileState>& state);
  // Counts a completed file and crashes when the count is reached. Locked.
  void CompleteFileLocked(const std::string& path);
  void CrashLocked();

  mutable std::mutex mu_;
  // Faults; -1 or empty: not armed. Guarded by mu_.
  int64_t append_budget_ = -1;
  int fail_file_index_ = -1;
  std::string fail_appends_glob_, fail_syncs_glob_, fail_renames_glob_;
  int rename_errno_ = EIO;
  int crash_after_ = -1;  // completed files matching crash_glob_ still to go; -1: not armed
  std::string crash_glob_;
  bool drop_unsynced_ = false;
  // State. Guarded by mu_.
  bool crashed_ = false;
  int files_created_ = 0;
  int files_completed_ = 0;
  int faults_injected_ = 0;
  std::map<std::string, std::shared_ptr<FileState>> files_;  // by current path
};

}  // namespace ringtrain::testing
