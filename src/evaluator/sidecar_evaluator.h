// The evaluator task: TensorFlow's side-car evaluation (tf.keras.utils.SidecarEvaluator)
// for a TF_CONFIG whose task is {"type": "evaluator"}. It is no member of the ring and
// never talks to the coordination service: it only reads the checkpoints training
// writes (evaluator/checkpoint_watcher.h), so training never waits for it and killing it
// never disturbs training.
//
// For each new complete checkpoint, in order, it evaluates the job's model with those
// weights on all of data.eval (inference::EvaluateModel, in batches of
// batch_size_per_worker: the numbers `ringtrain evaluate --model <that file>` prints),
// appends a record to its history file (evaluator/eval_history.h), writes the loss and
// metrics as TensorBoard scalars to <tensorboard_dir>/eval at step = the checkpoint's
// global step (tags: "loss" and each metric's history key, as SidecarEvaluator names
// them), and prints one line. It returns after the final checkpoint; restarted, it goes
// on after the last one its history holds.
//
// Threading: Run() on one thread. Blocking: Run() polls the file system every
// poll_interval_s and gives up after timeout_s without a new checkpoint
// (DEADLINE_EXCEEDED about Subject::kPeers: training stopped or is slower than that).
// Errors: data.eval's files as data errors (kData), checkpoints and outputs that cannot
// be read or written as kStorage, a job that cannot be evaluated as kConfig.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "common/memory_bound.h"
#include "common/status.h"
#include "config/job_config.h"
#include "data/dataset.h"
#include "env/env.h"
#include "evaluator/checkpoint_watcher.h"
#include "evaluator/eval_history.h"
#include "nn/model.h"
#include "summary/event_writer.h"

namespace ringtrain::evaluator {

struct EvaluatorOptions {
  int num_workers = 1;          // the training tasks of the cluster (backups record it)
  std::string history_path;     // empty: DefaultHistoryPath(job)
  double timeout_s = 3600;      // without a new checkpoint
  double poll_interval_s = 0.5;
  MemoryBound memory_bound;     // for the model and data.eval (config::MemoryBoundOf)
  env::Env* env = env::Default();  // not owned; must outlive the evaluator
  std::FILE* out = stdout;      // the lines, one per evaluation
};

// The job's history_file with ".eval" before its extension (history.jsonl ->
// history.eval.jsonl); without a history_file, eval_history.jsonl in the job file's
// directory.
std::string DefaultHistoryPath(const config::JobConfig& job);
// What the evaluator of `job` (trained by `num_workers` workers) watches: its
// model_checkpoint files or backups, matched against `model`'s weights.
WatchOptions WatchOptionsFor(const config::JobConfig& job, const nn::Model& model, int num_workers);

class SidecarEvaluator {
 public:
  // Checks the job (it needs data.eval and a model_checkpoint or backups), loads
  // data.eval and opens the history. Nothing is evaluated yet.
  static StatusOr<std::unique_ptr<SidecarEvaluator>> Create(const config::JobConfig& job, EvaluatorOptions options);

  // Evaluates checkpoints until the final one (OK) or the timeout.
  Status Run();

  // One evaluation, as Run() does it: the result is recorded, written and printed.
  Status Evaluate(const Checkpoint& c);
  const EvalHistory& history() const { return history_; }

 private:
  SidecarEvaluator(const config::JobConfig& job, EvaluatorOptions options, CheckpointWatcher watcher,
                   EvalHistory history)
      : job_(job), options_(std::move(options)), watcher_(std::move(watcher)), history_(std::move(history)) {}

  const config::JobConfig& job_;
  EvaluatorOptions options_;
  CheckpointWatcher watcher_;
  EvalHistory history_;
  std::unique_ptr<nn::Model> model_;
  data::Dataset data_;
  std::unique_ptr<summary::EventWriter> tensorboard_;  // opened at the first evaluation
};

}  // namespace ringtrain::evaluator
