// Synchronous data-parallel training of one worker: its data shard, the model, the
// optimizer, and a Communicator that all-reduces every step's gradients.
//
// The loss of each example is scaled by 1 / global batch, so the SUM all-reduce of the
// workers' gradients is the gradient of the mean loss over the global batch (the
// custom-training-loop seed's scaling). Every worker starts from the chief's weights
// (broadcast) and applies identical updates, so all workers stay bit-identical.
//
// Fault tolerance: the trainer's whole state at a step boundary is a
// backup::TrainState (Snapshot/Restore). Fit calls a hook at every backup point (every
// save_freq steps, or every epoch end), on every worker at the same steps, so that the
// caller can keep the state in memory and the chief can write it to disk. After a
// failure the caller restores a state and calls Fit again on a new communicator: the
// run continues from that step exactly as if it had not been interrupted.
//
// Keras' fit conveniences: job.lr_schedule sets the optimizer's rate before every step
// (a pure function of epoch and step, so a resumed run follows the same rates);
// job.validation_freq evaluates every worker's eval shard after the chosen epochs (all
// workers, all-reduced; uses no RNG, so the training trajectory is unchanged); and with
// job.tensorboard_dir the chief writes Keras' epoch scalars to <dir>/train and
// <dir>/validation, with the 0-based epoch index as the step, as Keras' TensorBoard
// callback does for epoch summaries.
//
// Device: the model runs on the engine::Engine that options.new_engine makes (the CPU
// one by default; worker/ passes engine::FactoryFor(its placement), which may be the GPU
// one). The trainer depends on no backend. The host model and optimizer hold the state whenever
// Fit is not running: Fit loads them into the engine when it starts and stores them
// back at backup points, checkpoints and its end, so Snapshot, Restore, SyncState and
// SaveModel work on the host as before. The update is the same bits on every device,
// so replicas stay identical even when some train on the CPU and some on a GPU.
//
// Threading: one thread drives a Trainer. Blocking: every collective has the
// communicator's deadline.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backup/backup.h"
#include "backup/train_state.h"
#include "checkpoint/safetensors.h"
#include "collective/communicator.h"
#include "common/memory_bound.h"
#include "common/status.h"
#include "config/job_config.h"
#include "data/dataset.h"
#include "data/pipeline.h"
#include "data/shard.h"
#include "engine/engine.h"
#include "env/env.h"
#include "nn/schedules/lr_schedule.h"
#include "nn/model.h"
#include "nn/optimizers/optimizer.h"
#include "preempt/stop_signals.h"
#include "train/agreement.h"
#include "summary/event_writer.h"
#include "train/history.h"
#include "train/progress.h"

namespace ringtrain::train {

class GradientSync;  // train/gradient_sync.h
class StepObserver;  // train/step_observer.h

struct TrainerOptions {
  int rank = 0;
  int num_workers = 1;
  bool is_chief = true;
  std::string progress_mode = "auto";  // see ProgressPrinter
  // Makes the engine the model trains on; null: the CPU engine. (The CPU kernels' thread
  // pool is the process's: the caller sizes it, kernels::SetNumThreads.)
  engine::EngineFactory new_engine;
  // How long a step may wait for gradient communication to make progress.
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(300)};
  FILE* out = stdout;
  // Every file the trainer writes (save_model, model_checkpoint, history_file,
  // tensorboard_dir) goes through it; not owned, must outlive the Trainer.
  env::Env* env = env::Default();
  // What the job may plan to use (RINGTRAIN_MAX_MEMORY_MB), checked by Create before
  // anything large is allocated (train/memory_bound.h). bytes == 0: no bound.
  MemoryBound memory_bound;
  // Told of every step, epoch end and backup point (train/step_observer.h); not owned,
  // each must outlive the Trainer's Fit calls. Empty: nobody watches.
  std::vector<StepObserver*> observers;
  // Testing only (RINGTRAIN_FAULT_COMPUTE_DELAY_MS): every step sleeps this long after
  // its backward pass, before it waits for the all-reduce, as a slow rank would. The
  // model's bytes do not change.
  std::chrono::milliseconds fault_compute_delay{0};
  // Preemption (preempt/stop_signals.h): Fit sets `listening` while it runs and polls
  // `requested` (set when this task is asked to stop, SIGTERM) after every step, agreeing
  // with every worker on the step to stop at (train/agreement.h RanksAskingToStop); not
  // owned. Null: never asked, no exchange.
  preempt::StopFlag* stop = nullptr;
};

// Where and why Fit stopped early on a stop request (Trainer::preemption()).
struct Preemption {
  int64_t global_step = -1;  // the step boundary every worker stopped at; -1: Fit did not stop early
  int epoch = 0, step = 0, steps = 0;  // 1-based epoch, steps done of it, steps per epoch
  std::vector<int> ranks;    // the ranks that asked to stop
  bool asked_here = false;   // this worker was among them
  double backup_seconds = 0; // the training thread's time for the extra backup point (0 if it was one anyway)
};

struct EpochResult {
  int epoch = 0;
  int steps = 0;
  // loss: Keras' "loss" (regularization included). accuracy: the value of the metric
  // named "accuracy" or "acc" (0 when the job has none); metrics: every metric of the
  // job, by its history key, in the job's order.
  double loss = 0, accuracy = 0, images_per_sec = 0, seconds = 0;
  NamedValues metrics;
  double learning_rate = 0;    // the rate of the epoch's last step ("lr" in the history)
  double step_ms = 0;          // mean wall time per step over the epoch (this run's steps)
  double comm_wait_share = 0;  // share of the epoch spent waiting for gradients (0 on one worker)
  double input_wait_share = 0; // share of the epoch this worker spent waiting for input batches
  bool has_val = false;        // validation_freq evaluated data.eval after this epoch
  double val_loss = 0, val_accuracy = 0;
  NamedValues val_metrics;     // the metrics' names without "val_"
};

struct EvalResult {
  double loss = 0, accuracy = 0;  // accuracy: as EpochResult's
  NamedValues metrics;
  int64_t examples = 0;
};

class Trainer {
 public:
  // Builds the model, optimizer and learning-rate schedule and loads this worker's
  // shards; the chief opens <tensorboard_dir>/train. Starts nothing on the network.
  // INVALID_ARGUMENT for a bad job; RESOURCE_EXHAUSTED (about kConfig) for a job that
  // would need more memory than options.memory_bound; NOT_FOUND / DATA_LOSS for data
  // files; the event file's error (with "tensorboard_dir" in it, Subject::kStorage)
  // when it cannot be created.
  static StatusOr<std::unique_ptr<Trainer>> Create(const config::JobConfig& job, const TrainerOptions& options);

  // Called at every backup point with the state (on every worker, at the same steps).
  // An error stops Fit and is returned by it.
  using BackupHook = std::function<Status(const backup::TrainState&)>;

  // Collective, on every new communicator before anything else: agrees on the steps
  // per epoch (one pass over the smallest shard unless the job sets it). INVALID_ARGUMENT
  // if the workers disagree with an earlier agreement or a shard is too small.
  Status Prepare(collective::Communicator* comm);
  // What a backup of this job must match (after Prepare).
  backup::BackupIdentity Identity() const;
  // The state at the current step boundary; every optimizer slot is as long as the
  // parameters (zeros before the first update, which is what the optimizers start from).
  backup::TrainState Snapshot() const;
  // Continues from `state` (sizes checked: INVALID_ARGUMENT). Rewrites the history file.
  Status Restore(const backup::TrainState& state);
  // Collective: every worker takes the state of the one furthest along (the lowest rank
  // among those with the highest step), so a worker that restarted from an older backup
  // or from scratch catches up with the survivors. At the start this is TensorFlow's
  // broadcast of the chief's initial weights. When every worker's state fingerprint
  // (StateFingerprint) and step are the same, as at a fresh start, nothing is sent.
  // True when this worker's state was replaced by the one received.
  StatusOr<bool> SyncState(collective::Communicator* comm);
  // A fingerprint of everything Snapshot() holds (weights, optimizer slots and
  // iterations, step, the epoch's sums, the history), without copying it.
  uint64_t StateFingerprint() const;

  // Trains from the current step to the end of job.epochs over `comm` (not owned; its
  // rank/size must match the options). Call Prepare and SyncState first.
  // When a worker asks to stop (options.stop), every worker stops after the
  // same step, which becomes a backup point (on_backup is called) if it was not one, and
  // Fit returns an error: ABORTED "preempted at step ..." on a worker that asked (the
  // caller exits 7, see preemption()); on the others UNAVAILABLE about Subject::kPeers,
  // as for a lost peer (recovery in place waits for the stopped ones to come back).
  Status Fit(collective::Communicator* comm, const BackupHook& on_backup = nullptr);
  // Evaluates job's eval split, sharded across workers and all-reduced.
  // FAILED_PRECONDITION if the job has no eval data.
  StatusOr<EvalResult> Evaluate(collective::Communicator* comm);
  // The chief writes job.save_model; other workers write to a temporary directory
  // beside it and delete it (as the seed tutorial does). No-op without save_model.
  // Errors are Subject::kStorage, as are Fit's when the history file, a model
  // checkpoint or a TensorBoard file cannot be written.
  Status SaveModel();

  const std::vector<EpochResult>& history() const { return history_; }
  const nn::Model& model() const { return *model_; }
  // "CPU (avx512 kernels, 2 threads)", "GPU 0: NVIDIA H200 (...)".
  std::string DeviceDescription() const { return engine_->Describe(); }
  // FNV-1a of the weights' bytes, equal on every worker after each step.
  uint64_t WeightsFingerprint() const;
  const data::Shard& train_shard() const { return train_; }
  int64_t global_step() const { return global_step_; }
  // The last Fit's early stop, if it stopped on a stop request (global_step -1 if not).
  const Preemption& preemption() const { return preemption_; }
  // Whether this task has been asked to stop (options.stop->requested), now.
  bool stop_requested() const { return options_.stop != nullptr && options_.stop->requested.load(); }
  // Replaces options.stop (before Fit; the flag must outlive the Trainer).
  void set_stop_flag(preempt::StopFlag* flag) { options_.stop = flag; }
  int64_t total_steps() const { return static_cast<int64_t>(job_.epochs) * steps_per_epoch_; }
  int steps_per_epoch() const { return steps_per_epoch_; }
  // Time the training thread spent at backup points (snapshot and hook), and in Fit.
  double backup_seconds() const { return backup_seconds_; }
  double fit_seconds() const { return fit_seconds_; }

 private:
  // Trainer::Create's check of the data's labels against the model's output (trainer.cc).
  Status FitObjectiveToLabels(const config::JobConfig& job, const Status& class_objective, bool* per_value);
  // The same for a model with several inputs or outputs (trainer_outputs.cc): the data's
  // named arrays against the model's inputs and outputs, and the objective per output.
  Status FitNamedInputs() const;
  Status FitOutputs(const config::JobConfig& job);
  Trainer(const config::JobConfig& job, const TrainerOptions& options) : job_(job), options_(options) {}
  // What Fit measured over one epoch, for EndEpoch.
  struct EpochTiming {
    int steps_run = 0;           // steps of this epoch run by this Fit (fewer after a resume)
    double seconds = 0;          // wall time of those steps
    double comm_wait_seconds = 0;
    double input_wait_seconds = 0;  // Next waiting for the input pipeline
    double learning_rate = 0;    // the last step's
  };
  bool IsBackupPoint(bool epoch_end) const;
  // A backup point: the epoch's metrics reduced (unless at its end) and the hook given the
  // state; returns the training thread's seconds in the hook (0 without one).
  StatusOr<double> TakeBackupPoint(collective::Communicator* comm, bool epoch_end, const BackupHook& on_backup);
  // After every worker agreed to stop at this step (ranks asked): makes it a backup point
  // unless it was one, records preemption_ and returns Fit's status (see Fit).
  Status StopAtBoundary(collective::Communicator* comm, const std::vector<int>& ranks, int epoch, int step,
                        bool epoch_end, const BackupHook& on_backup);
  // The learning rate for the next step of 0-based epoch `epoch0` (sets the optimizer's).
  double NextLearningRate(int epoch0);
  Status EndEpoch(collective::Communicator* comm, int epoch, const EpochTiming& timing, EpochLine* line);
  // This worker's eval shard, all-reduced (loss sum, correct, count) in a fixed order.
  StatusOr<EvalResult> EvaluateShards(collective::Communicator* comm);
  Status WriteTensorBoard(const EpochResult& r);
  // carried_ plus every worker's pending_ (which it clears).
  StatusOr<MetricSums> ReduceMetrics(collective::Communicator* comm);
  Status WriteModelCheckpoint(int epoch);
  // The metrics' values from summed metric sums (empty sums: zeros), by name.
  NamedValues MetricValues(const std::vector<double>& sums) const;
  // The value of the metric named "accuracy" or "acc" among `values`, else 0.
  static double AccuracyOf(const NamedValues& values);
  // One training step on the batch already submitted to the engine; submits the next
  // one (while the step computes) when `prefetch`.
  StatusOr<engine::BatchStats> Step(collective::Communicator* comm, GradientSync* sync, data::Pipeline* input,
                               float grad_scale, bool prefetch);
  // The job's data.pipeline for this worker's `split` ("train" / "eval"): a file cache
  // gets its own file, <cache>.<split>.w<rank>, keyed by the source entry.
  data::PipelineOptions PipelineFor(const std::string& split, const nlohmann::json& entry) const;
  std::vector<checkpoint::TensorView> WeightViews() const;

  config::JobConfig job_;
  TrainerOptions options_;
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<engine::Objective> objective_;  // the job's loss and metrics (the engine points at it)
  std::unique_ptr<engine::Engine> engine_;    // runs model_ and optimizer_ (declared after them: destroyed first)
  std::unique_ptr<nn::LrSchedule> schedule_;  // null: the optimizer's own rate throughout
  std::unique_ptr<summary::EventWriter> tb_train_, tb_validation_;  // chief with tensorboard_dir only
  data::Shard train_;
  bool has_eval_ = false;
  data::Shard eval_;
  // The input pipelines, kept across Fit calls (a memory cache survives recovery in place).
  std::unique_ptr<data::Pipeline> train_input_;
  int train_input_rank_ = -1;
  std::unique_ptr<data::Pipeline> eval_input_;
  std::vector<float> eval_images_;
  std::vector<int32_t> eval_labels_;
  std::unique_ptr<HistoryFile> history_file_;  // chief only
  std::vector<EpochResult> history_;
  nlohmann::json history_json_ = nlohmann::json::array();  // history_ as the history file holds it

  int steps_per_epoch_ = 0;  // agreed by Prepare
  int64_t global_step_ = 0;  // steps completed
  // This epoch's metrics: `carried_` summed over every worker at the last backup point,
  // `pending_` this worker's since then. At a backup point pending_ is all zero.
  MetricSums carried_;
  MetricSums pending_;
  // carried_ + pending_, with a sum for every metric: what Snapshot() records.
  MetricSums EpochSums() const;
  double backup_seconds_ = 0, fit_seconds_ = 0;
  Preemption preemption_;
};

}  // namespace ringtrain::train
