// What the evaluator task (TF_CONFIG "evaluator", TensorFlow's side-car evaluation)
// watches: the checkpoints training writes, found complete and handed out in order.
//
//   model_checkpoint (the job's "model_checkpoint.filepath", ckpt_{epoch}.safetensors):
//     epoch e's file counts once the safetensors reader accepts it whole (sizes, offsets,
//     finite values); its order is its epoch; the job's last epoch is the final one.
//   backups (backup_and_restore.backup_dir, when the job has no model_checkpoint):
//     ckpt-<step>.safetensors counts once its .json commit record exists and the pair
//     checks out (backup::DecodeBackup: every checksum, sizes, this job's fingerprint and
//     worker count); its order is its global step; the final one is the backup of the
//     job's last step. Training prunes backups to the newest two and, with
//     delete_checkpoint, deletes them after it finishes: a backup pruned before it was
//     seen is skipped, and when the directory holds no backup, the job's save_model file
//     is the final checkpoint (training finished) if a backup was seen before (by this
//     watcher, or by an earlier evaluator: its history) or the file was written after
//     the watcher was created (a file from an earlier run is not this run's end).
//
// A file that is being written, or that does not check out yet, is not handed out:
// Next() finds it again on a later call. One that does not check out while a later
// one does is skipped with a warning (it will not get better).
//
// Threading: one thread at a time. Blocking: reads the files (disk I/O only).
// Errors: a file the system refuses to read (permissions, an I/O error) and a backup of
// another job (FAILED_PRECONDITION) are errors about Subject::kStorage naming the path;
// nothing throws.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backup/backup.h"
#include "checkpoint/safetensors.h"
#include "common/status.h"
#include "env/env.h"

namespace ringtrain::evaluator {

enum class Source { kModelCheckpoint, kBackup, kSavedModel };
// "model_checkpoint" | "backup" | "save_model": the history file's "source".
const char* SourceName(Source s);

// Where the evaluator is in the sequence: the last checkpoint it evaluated.
struct Position {
  int epoch = 0;        // completed epochs of the last checkpoint evaluated (0: none)
  int64_t step = -1;    // its global step (-1: none or unknown)
  bool final = false;   // it was the final one: nothing is left
};

struct Checkpoint {
  Source source = Source::kModelCheckpoint;
  std::string path;     // the weights file
  int epoch = 0;        // completed epochs when it was written
  int64_t step = -1;    // the global step it was written at; -1 when the file does not say
  bool final = false;   // the last one training writes
  // Its model weights by parameter name ("dense/kernel"), as inference::LoadWeights takes them.
  std::map<std::string, checkpoint::Tensor> weights;
};

struct WatchOptions {
  std::string model_checkpoint;  // the resolved pattern ("{epoch}"), or empty: watch backups
  std::string backup_dir;        // resolved, or empty
  std::string save_model;        // resolved, or empty
  int epochs = 1;                // the job's
  int steps_per_epoch = 0;       // the job's, or 0 when it is one pass over the data (backups say)
  // What a backup must match (backup::DecodeBackup); steps_per_epoch and
  // optimizer_name are taken from each backup's own record.
  std::string job_fingerprint;
  int num_workers = 0;
  std::vector<backup::ParamSpec> params;
};

class CheckpointWatcher {
 public:
  // `env` is not owned and must outlive the watcher. INVALID_ARGUMENT about kConfig when
  // the options watch nothing (no model_checkpoint and no backup_dir) or the pattern is bad.
  static StatusOr<CheckpointWatcher> Create(WatchOptions options, env::Env* env = env::Default());

  // The first complete checkpoint after `after` in order (a later epoch for
  // model_checkpoint, a later step for backups), or nullopt when none is complete yet.
  StatusOr<std::optional<Checkpoint>> Next(const Position& after);

  // What Next() is waiting for, for the line printed when the evaluator gives up.
  std::string Waiting(const Position& after) const;

 private:
  CheckpointWatcher(WatchOptions options, env::Env* env) : options_(std::move(options)), env_(env) {}
  StatusOr<std::optional<Checkpoint>> NextModelCheckpoint(const Position& after);
  StatusOr<std::optional<Checkpoint>> NextBackup(const Position& after);
  StatusOr<std::optional<Checkpoint>> SavedModel(const Position& after);

  WatchOptions options_;
  env::Env* env_;
  bool seen_backup_ = false;               // a backup of this run was in backup_dir
  std::string save_model_at_start_;        // save_model's size and time when created ("" if absent)
  int64_t steps_per_epoch_ = 0;            // from the last backup read
  std::map<std::string, std::string> warned_;  // path -> the warning already logged
};

}  // namespace ringtrain::evaluator
