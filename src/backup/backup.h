// BackupAndRestore's files: one directory, written by the chief only, read by every
// worker on start.
//
//   <backup_dir>/ckpt-<global_step, 12 digits>.safetensors   weights and optimizer state
//   <backup_dir>/ckpt-<global_step, 12 digits>.json          metadata: the commit record
//
// The safetensors file holds "params/<param name>" (the parameter's shape),
// "optimizer/<slot>" (flat, as long as params) for each optimizer slot, all F32. The
// JSON holds {"format": "ringtrain-backup", "version": 1, "job_fingerprint",
// "num_workers", "steps_per_epoch", "global_step", "epoch" (completed epochs),
// "step_in_epoch", "optimizer": {"name", "iterations", "slots": [...]},
// "metrics": {"loss_sum", "correct", "examples", "sums" (optional)}, "history": [...],
// "weights_file", "weights_bytes", "checksums": {tensor name: CRC-32 (zlib) hex of its
// bytes}}.
//
// Crash safety: the safetensors file is written first, then the JSON, each with
// env::WriteFileAtomically (temporary name, fsync, rename, fsync of the directory). A
// backup exists only once its JSON does; the previous one is deleted only after that,
// and the newest two are kept so that a newest backup found corrupted later still has a
// fallback. Stray temporary files and weights without a JSON (from a writer that was
// killed, or that hit a full disk) are ignored by readers and removed by the next
// writer. tests/backup/backup_faults_test.cc injects each fault (ENOSPC, EIO on fsync,
// a failed rename, a crash between the two files) and checks exactly that.
//
// Files: every call goes through an env::Env (env/env.h), env::Default() unless a
// test passes another; it must outlive the call (the BackupWriter: the writer).
// Errors: a file that cannot be written, listed, read or deleted, and a backup that is
// refused, are tagged Subject::kStorage (exit code 6) and say what to do.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backup/train_state.h"
#include "common/deadline.h"
#include "common/status.h"
#include "env/env.h"

namespace ringtrain::backup {

struct ParamSpec {
  std::string name;            // "conv2d/kernel"
  std::vector<int64_t> shape;
  size_t offset = 0;           // into the flat buffer, in floats
  size_t size() const;         // product of shape
};

// What a backup must match to be loaded: written into every backup and checked on load.
struct BackupIdentity {
  std::string job_fingerprint;  // config::JobConfig::TrajectoryFingerprint()
  int num_workers = 0;
  int steps_per_epoch = 0;
  std::string optimizer_name;    // nn::Optimizer::name()
  std::vector<ParamSpec> params; // the model's parameters, in the flat buffer's order
  size_t num_params() const;     // total floats
};

// "ckpt-000000000123": the two files' name, less the extension, of the backup taken
// after `global_step` steps (0 <= global_step < 10^12).
std::string BackupStem(int64_t global_step);

// Serialises a state to the two files' contents (also used to send the state between
// workers). Deterministic: equal inputs give equal bytes.
struct EncodedBackup {
  std::string weights;   // safetensors bytes
  std::string metadata;  // JSON text
};
// INVALID_ARGUMENT if the state does not fit the identity (buffer sizes).
StatusOr<EncodedBackup> EncodeBackup(const BackupIdentity& identity, const TrainState& state);
// Parses and verifies (format, sizes, every checksum); DATA_LOSS naming what is wrong
// for anything corrupted or truncated, and for weights or optimizer state holding NaN
// or infinity (naming the tensor and index: a diverged run is not one to resume, so
// LoadNewestBackup skips such a backup like a corrupted one); never throws, whatever
// the bytes. FAILED_PRECONDITION, saying which field differs
// and what to do, when the backup is intact but belongs to a different job
// configuration or worker count (it must never be loaded).
StatusOr<TrainState> DecodeBackup(const BackupIdentity& identity, const EncodedBackup& encoded);

// Writes one backup into `dir` (created if missing) synchronously, then deletes all but
// the newest two complete backups and stray temporary files. Blocks on disk I/O.
// Errors name the path. The file names come from state.global_step.
// "The newest two" are this backup and the newest complete one older than it: a backup
// newer than the one being written belongs to an abandoned timeline (training resumed
// from an older backup because that one was corrupted, or rolled back) and is deleted,
// so that readers find the one just written.
Status WriteBackup(const std::string& dir, const BackupIdentity& identity, const TrainState& state,
                   env::Env* env = env::Default());

struct LoadedBackup {
  TrainState state;
  std::string path;  // the metadata file it came from
};
// The newest good backup in `dir`, newest first by global_step: a backup whose files
// are missing, truncated, unparsable or fail a checksum is skipped with a warning
// appended to *warnings ("backup ckpt-...json is corrupted (...); using the previous
// one"). nullopt when the directory is missing or holds no good backup. An intact
// backup from a different configuration or worker count is an error
// (FAILED_PRECONDITION, naming the directory and what differs: "delete it or point
// backup_dir elsewhere"), never skipped silently and never loaded; so is a file the
// system refuses to read (PERMISSION_DENIED, an I/O error), which says nothing about
// the backup in it.
StatusOr<std::optional<LoadedBackup>> LoadNewestBackup(const std::string& dir, const BackupIdentity& identity,
                                                       std::vector<std::string>* warnings,
                                                       env::Env* env = env::Default());

// Deletes every backup file (and stray temporary file) of ours in `dir`, then the
// directory itself if it is left empty. Other files are left alone.
Status DeleteBackups(const std::string& dir, env::Env* env = env::Default());

// Writes backups on a background thread so that training does not wait for the disk.
// Submit() copies nothing more than the caller hands over (the state is moved in); at
// most one backup is written at a time and at most one waits: a newer submission
// replaces a waiting older one. Errors are kept and returned by the next Submit() or
// Flush(): Submit() reports the first unreported error and clears it (its own state is
// queued regardless); Flush() reports it without clearing it. The errors are
// WriteBackup's (kStorage). Threading: Submit/Flush/destructor from one owner thread.
class BackupWriter {
 public:
  // `env` is not owned and must outlive the writer.
  BackupWriter(std::string dir, BackupIdentity identity, env::Env* env = env::Default());
  ~BackupWriter();  // finishes the backup being written (bounded by the disk), never throws

  // Queues `state`; returns at once. Returns the error of an earlier write, if any.
  Status Submit(TrainState state);
  // Waits until everything submitted is on disk; DEADLINE_EXCEEDED if it is not by
  // the deadline; otherwise the first write error, if any.
  Status Flush(Deadline deadline);
  // The global_step of the newest backup completely written by this writer, -1 if none.
  int64_t last_written_step() const;
  // Backups written so far and the wall time the writer thread spent on them.
  struct Stats {
    int64_t written = 0;
    double seconds = 0;
  };
  Stats stats() const;

 private:
  void Loop();

  const std::string dir_;
  const BackupIdentity identity_;
  env::Env* const env_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<TrainState> pending_;  // guarded by mu_
  bool writing_ = false;               // guarded by mu_
  bool stop_ = false;                  // guarded by mu_
  Status error_;                       // guarded by mu_
  int64_t last_written_ = -1;          // guarded by mu_
  Stats stats_;                        // guarded by mu_
  std::thread thread_;
};

// ModelCheckpoint's file name for an epoch: "{epoch}" becomes the epoch number and
// "{epoch:0Nd}" the number padded to N digits, as Keras formats it; other text is kept.
// INVALID_ARGUMENT for any other "{...}" field.
StatusOr<std::string> FormatCheckpointPath(const std::string& pattern, int epoch);

}  // namespace ringtrain::backup
