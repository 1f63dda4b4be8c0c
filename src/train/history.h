// The history file: one JSON object per epoch ({"epoch", "loss", "accuracy",
// "images_per_sec", ...}) and, after an evaluation, a last line {"evaluation": {...}}.
// Rewritten whole and crash-safely (env::WriteFileAtomically) after every epoch, by the
// chief only. A write that fails is a storage error (Subject::kStorage, exit code 6)
// naming the file and what to do.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "env/env.h"

namespace ringtrain::train {

class HistoryFile {
 public:
  // `env` is not owned and must outlive the HistoryFile.
  explicit HistoryFile(std::string path, env::Env* env = env::Default()) : path_(std::move(path)), env_(env) {}
  Status AppendEpoch(const nlohmann::json& epoch);
  Status SetEvaluation(const nlohmann::json& evaluation);
  // Replaces every epoch line (after a restore from a backup) and drops the evaluation.
  Status Reset(const nlohmann::json& epochs);

 private:
  Status Write();
  std::string path_;
  env::Env* env_;
  std::vector<nlohmann::json> lines_;
  nlohmann::json evaluation_;
};

}  // namespace ringtrain::train
