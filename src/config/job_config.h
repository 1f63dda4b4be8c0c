// The job file: what to train and how (JSON; relative paths resolve against the
// file's directory). The top level is validated here; the "model", "optimizer" and
// data-source sections are validated by the libraries that own them (nn, data).
// "model": {"keras_json": "model.json" | {...}} (Keras' model.to_json()) is read and
// translated here (nn/keras/keras_json.h), so that `model` and `raw` hold the compact form.
// Unknown keys are errors that name the key, so typos are caught before training.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/pipeline.h"

namespace ringtrain::config {

struct CommunicationConfig {
  std::string implementation = "AUTO";  // AUTO | RING | NCCL
  double timeout_seconds = 0;           // per collective; 0 = the default from Settings
  size_t bytes_per_pack = 0;            // gradient pack size; 0 = one pack
};

// Keras' BackupAndRestore: {"backup_dir": "...", "save_freq": "epoch" | N, "delete_checkpoint": true}.
struct BackupConfig {
  std::string backup_dir;       // resolved; empty = no backups
  int save_freq_steps = 0;      // back up every N steps; 0 = at the end of every epoch ("epoch")
  bool delete_checkpoint = true;  // delete the backups after a successful finish
  bool enabled() const { return !backup_dir.empty(); }
};

// What survivors do when a task fails. kInPlace: keep the process, roll back to the
// last backup, wait for the failed task to return, re-form the ring. kRestart:
// TensorFlow's behaviour, every task exits (kExitPeerFailure) and a supervisor restarts
// them all; they resume from the backup.
enum class RecoveryMode { kInPlace, kRestart };

struct JobConfig {
  nlohmann::json raw;     // the file as parsed: what the chief compares across workers
  std::string base_dir;   // the job file's directory ("." for inline jobs)

  nlohmann::json model;                 // the compact form ("keras_json" already translated)
  // "loss" as Keras takes it (a name, {"type": ...} or {"class_name", "config"}; nn/losses/loss.h),
  // checked here except for what needs the model's output size. Absent: the compact
  // form's default {"type": "sparse_categorical_crossentropy", "from_logits": true}.
  nlohmann::json loss;
  // "metrics": Keras' list (nn/metrics/metrics.h); absent: ["accuracy"], null: none.
  nlohmann::json metrics;
  // A model with several outputs (engine/objective.h ForOutputs): "loss" may also be a list
  // per output or an object by output name, "metrics" a list of lists or an object of
  // lists, and "loss_weights" (null: each 1) a list or an object of numbers.
  nlohmann::json loss_weights;
  nlohmann::json optimizer;
  nlohmann::json train_data;            // data.train
  nlohmann::json eval_data;             // data.eval, or null
  std::string auto_shard_policy = "AUTO";
  data::PipelineOptions pipeline;       // data.pipeline (data/pipeline.h); not part of the trajectory
  int batch_size_per_worker = 0;
  int epochs = 1;
  int steps_per_epoch = 0;              // 0: one pass over the smallest worker shard
  uint64_t seed = 0;
  CommunicationConfig communication;
  // "initial_weights": a safetensors file loaded by name before training (resolved), or
  // empty; "skip_mismatch": weights whose shape differs keep their initial values
  // (inference/weights_by_name.h). Part of the trajectory (the path, not the bytes).
  std::string initial_weights;
  bool skip_mismatch = false;
  std::string save_model;               // resolved path, or empty
  std::string history_file;             // resolved path, or empty
  BackupConfig backup;                  // backup_and_restore
  std::string model_checkpoint;         // model_checkpoint.filepath resolved ("ckpt/ckpt_{epoch}.safetensors"), or empty
  RecoveryMode recovery = RecoveryMode::kInPlace;  // "recovery": "in_place" | "restart"
  // "elastic": {"min_workers": M, "wait_s": S}: a task declared failed that has not come
  // back within S seconds is hosted by a surviving process (its virtual rank: its shard,
  // its stream, its place in every sum), as long as M tasks' processes are present, and
  // handed back when it returns; the model stays the uninterrupted run's bytes. Needs
  // "recovery": "in_place".
  struct Elastic {
    bool enabled = false;
    int min_workers = 1;
    double wait_s = 0;
  } elastic;

  // "lr_schedule": the raw object, or null when absent (no schedule: the optimizer's
  // learning_rate throughout). Only checked to be an object here; nn::LrSchedule::FromJson
  // validates the rest, like "optimizer".
  nlohmann::json lr_schedule;
  // "validation_freq" (Keras' fit argument): evaluate data.eval during fit. An integer k
  // evaluates after every k-th epoch (0 or absent: never); a list of 1-based epoch numbers
  // such as [1, 5, 10] evaluates after those. Either form needs data.eval.
  int validation_freq = 0;              // k, or 0 when absent or given as a list
  std::vector<int> validation_epochs;   // the list form: positive, strictly increasing
  // "tensorboard_dir": where the chief writes TensorBoard event files (resolved); empty = off.
  std::string tensorboard_dir;
  // "device": where the model trains: "auto" (a GPU when this build has the GPU engine
  // and the machine a usable GPU, else the CPU), "cpu" or "gpu" (an error without one).
  // Lower-cased here; device::Place resolves it on each worker.
  std::string device = "auto";

  // Whether to evaluate data.eval after 1-based epoch `epoch1` (Keras: (epoch0 + 1) % k == 0,
  // or epoch1 in the list).
  bool ValidateAfterEpoch(int epoch1) const;

  // Canonical text of `raw` (sorted keys): equal for equal jobs.
  std::string CanonicalJson() const { return raw.dump(); }
  // Hex fingerprint of the fields that decide the training trajectory (model, loss,
  // optimizer, lr_schedule, training data and sharding, batch size, steps per epoch,
  // seed). A backup carries it and is loaded only by a job with the same one; epochs,
  // evaluation data, validation_freq, output paths (tensorboard_dir included),
  // communication, device and recovery settings may change between runs.
  std::string TrajectoryFingerprint() const;
  // A path from the job resolved against base_dir (absolute paths unchanged).
  std::string Resolve(const std::string& path) const;
};

// The largest job file read (LoadJobConfig): real jobs are a few KiB; gRPC carries the
// job to the chief at Register, so it must stay well inside a message.
constexpr uint64_t kMaxJobFileBytes = uint64_t{16} << 20;

// The largest Keras model JSON file read for "model.keras_json": VGG16's is 40 KiB;
// its compact form replaces it in `raw`, which must fit a Register message.
constexpr uint64_t kMaxKerasJsonFileBytes = kMaxJobFileBytes;

// Parses a job from text. `base_dir` anchors relative paths. Every error is an
// INVALID_ARGUMENT about Subject::kConfig, one line naming the field; nothing throws
// (numbers out of range such as 1e400, integer fields given 2.5, 1e30 or -5 included).
StatusOr<JobConfig> ParseJobConfig(const std::string& text, const std::string& base_dir);
// Reads (at most kMaxJobFileBytes; only a regular file: not a directory, FIFO or
// device) and parses the job file at `path`. INVALID_ARGUMENT about kConfig if it
// cannot be read.
StatusOr<JobConfig> LoadJobConfig(const std::string& path);

}  // namespace ringtrain::config
