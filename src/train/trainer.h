// Synchronous data-parallel training of one worker: its data shard, the model, the
// optimizer, and a Communicator that all-reduces every step's gradients.
//
// The loss of each example is scaled by 1 / global batch, so the SUM all-reduce of the
// workers' gradients is the gradient of the mean loss over the global batch (the
// custom-training-loop seed's scaling). Every worker starts from the chief's weights
// (broadcast) and applies identical updates, so all workers stay bit-identical.
//
// Threading: one thread drives a Trainer. Blocking: every collective has the
// communicator's deadline.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"
#include "config/job_config.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "train/history.h"
#include "train/progress.h"

namespace ringtrain::train {

struct TrainerOptions {
  int rank = 0;
  int num_workers = 1;
  bool is_chief = true;
  std::string progress_mode = "auto";  // see ProgressPrinter
  int num_threads = 1;                 // BLAS threads for this worker
  // How long a step may wait for gradient communication to make progress.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(300)};
  FILE* out = stdout;
};

struct EpochResult {
  int epoch = 0;
  int steps = 0;
  double loss = 0, accuracy = 0, images_per_sec = 0, seconds = 0;
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t examples = 0;
};

class Trainer {
 public:
  // Builds the model and optimizer and loads this worker's shards. Starts nothing on
  // the network. INVALID_ARGUMENT for a bad job; NOT_FOUND / DATA_LOSS for data files.
  static StatusOr<std::unique_ptr<Trainer>> Create(const config::JobConfig& job, const TrainerOptions& options);

  // Runs job.epochs epochs over `comm` (not owned; its rank/size must match the options).
  Status Fit(Communicator* comm);
  // Evaluates job's eval split, sharded across workers and all-reduced.
  // FAILED_PRECONDITION if the job has no eval data.
  StatusOr<EvalResult> Evaluate(Communicator* comm);
  // The chief writes job.save_model; other workers write to a temporary directory
  // beside it and delete it (as the seed tutorial does). No-op without save_model.
  Status SaveModel();

  const std::vector<EpochResult>& history() const { return history_; }
  const nn::Model& model() const { return *model_; }
  // FNV-1a of the weights' bytes, equal on every worker after each step.
  uint64_t WeightsFingerprint() const;
  const data::ShardResult& train_shard() const { return train_; }

 private:
  Trainer(const config::JobConfig& job, const TrainerOptions& options) : job_(job), options_(options) {}
  StatusOr<int> StepsPerEpoch(Communicator* comm);

  config::JobConfig job_;
  TrainerOptions options_;
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  data::ShardResult train_;
  bool has_eval_ = false;
  data::ShardResult eval_;
  std::unique_ptr<HistoryFile> history_file_;  // chief only
  std::vector<EpochResult> history_;
};

}  // namespace ringtrain::train
