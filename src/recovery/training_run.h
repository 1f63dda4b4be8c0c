// One task's training as a member of a cluster that may lose any process: meet the
// others in a generation, agree on the state, train, and when the generation breaks
// either recover in place (roll back to the last backup held in memory, meet again in
// the next generation once the failed task is back, catch it up, go on) or exit so that
// a supervisor restarts every task (recovery "restart", TensorFlow's behaviour).
//
// Backups (BackupAndRestore): the chief writes every backup point's state to
// backup_dir on a background thread; every task loads the newest good backup when it
// first joins; the task furthest along then gives its state to the others.
//
// Threading: one thread. Blocking: each wait is bounded by a timeout from Settings
// (rendezvous) or the communicator's deadline.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backup/backup.h"
#include "backup/train_state.h"
#include "cluster/session.h"
#include "collective/communicator.h"
#include "common/status.h"
#include "config/job_config.h"
#include "env/env.h"
#include "train/trainer.h"

namespace ringtrain::recovery {

struct RunOptions {
  collective::CommunicatorOptions comm;
  config::RecoveryMode mode = config::RecoveryMode::kInPlace;
  config::BackupConfig backup;
  bool evaluate = false;  // run the job's evaluation after training
  double shutdown_timeout_s = 60;
  // The backups' files go through it (the trainer's through TrainerOptions::env); not
  // owned, must outlive the run.
  env::Env* env = env::Default();
  // Told of each generation formed, and of each failed generation recovered from in
  // place (with why), e.g. by the metrics; null: nobody. Called on the run's thread;
  // must return at once.
  std::function<void(int64_t generation)> on_generation;
  std::function<void(const Status& why)> on_recovery;
  // An event for the chief's status (kind, one line): "backup_fallback" when a corrupted
  // backup was skipped on load. Null: none.
  std::function<void(const std::string& kind, const std::string& message)> on_event;
};

struct RunResult {
  // OK, or why the run stopped: its Subject and code give the exit code
  // (common/exit_policy.h ExitCodeFor): kPeers (5) for a peer failure under "restart" or
  // an eviction, kCluster (4) for a cluster that did not (re)assemble, kStorage (6) for
  // backups, checkpoints and the history, kConfig/kData or the code otherwise.
  Status status;
  int recoveries = 0;  // generations that failed and were recovered from in place
  // This task was asked to stop (SIGTERM/SIGINT) and stopped at a step boundary after the
  // backup of that step: exit 7 (common/exit_codes.h kExitPreempted), with status's
  // message as its one line ("preempted at step 123 (epoch 2, step 53/70); backup
  // written in 0.21 s; restart to resume").
  bool preempted = false;
};

class TrainingRun {
 public:
  // Neither is owned; both outlive the run.
  TrainingRun(train::Trainer* trainer, cluster::Session* session, RunOptions options);
  ~TrainingRun();  // waits for a backup being written (bounded by the disk); never throws

  // Trains (and evaluates) to the end, recovering as configured.
  RunResult Train();
  // After the task has left the cluster: waits for the last backup; if every task
  // finished (`cluster_done`) and delete_checkpoint is set, the chief deletes them.
  void Finish(bool cluster_done);

 private:
  // One generation on `comm`: OK when the job is done, else why it failed (recovering
  // in place can help exactly when common/exit_policy.h's IsTransient says so).
  Status RunGeneration(collective::Communicator* comm);
  Status LoadFromDisk();
  Status OnBackup(const backup::TrainState& state);
  // After Fit stopped on a stop request (trainer_->preemption()): the chief waits for the
  // boundary's backup. Fills result->preempted and the task's line for a task that was
  // asked (at the agreement or since); a kStorage error if the backup could not be written; else `fit_status`.
  Status AfterPreemption(const Status& fit_status, RunResult* result);

  train::Trainer* trainer_;
  cluster::Session* session_;
  RunOptions options_;
  // The last backup point, for rollbacks; empty until this process has a state (from
  // the disk, or from the start).
  std::optional<backup::TrainState> snapshot_;
  std::unique_ptr<backup::BackupWriter> writer_;  // the chief's, with backups on
  double recovery_since_ = -1;  // steady-clock seconds when a recovery began; -1: none under way
};

}  // namespace ringtrain::recovery
