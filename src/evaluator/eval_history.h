// The evaluator's history file: one JSON object per evaluated checkpoint, in the order
// they were evaluated (JSON lines, like the trainer's history_file):
//   {"source": "model_checkpoint", "checkpoint": "/run/ckpt_2.safetensors", "epoch": 2,
//    "step": 24, "examples": 256, "loss": 0.83, "accuracy": 0.68, "final": false,
//    "unix_time": 1764000000.5}
// with the loss and every metric of the job by its history key, at full double
// precision. It is what makes a restarted evaluator go on where it stopped: the last
// record's epoch and step are the Position to continue after.
//
// Crash safety: rewritten whole with env::WriteFileAtomically after every evaluation, so
// a killed evaluator leaves the file as it was before or after a record, never half.
// Threading: one thread at a time. Blocking: disk I/O only.
// Errors: a file that cannot be read or written is about Subject::kStorage (exit 6),
// naming the path; a file that is not such a history says so and what to do.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "env/env.h"
#include "evaluator/checkpoint_watcher.h"

namespace ringtrain::evaluator {

class EvalHistory {
 public:
  // Reads the records already at `path` (none when it does not exist). `env` is not
  // owned and must outlive the history.
  static StatusOr<EvalHistory> Open(const std::string& path, env::Env* env = env::Default());

  const std::vector<nlohmann::json>& records() const { return records_; }
  // Where the last record leaves the evaluator (Position{} when there is none).
  Position position() const;
  // Appends `record` (it must hold "epoch", "step" and "final") and rewrites the file.
  Status Append(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  EvalHistory(std::string path, env::Env* env) : path_(std::move(path)), env_(env) {}
  std::string path_;
  env::Env* env_;
  std::vector<nlohmann::json> records_;
};

}  // namespace ringtrain::evaluator
