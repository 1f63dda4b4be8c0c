// The history file: one JSON object per epoch ({"epoch", "loss", "accuracy",
// "images_per_sec", ...}) and, after an evaluation, a last line {"evaluation": {...}}.
// Rewritten whole and crash-safely after every epoch, by the chief only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::train {

class HistoryFile {
 public:
  explicit HistoryFile(std::string path) : path_(std::move(path)) {}
  Status AppendEpoch(const nlohmann::json& epoch);
  Status SetEvaluation(const nlohmann::json& evaluation);
  // Replaces every epoch line (after a restore from a backup) and drops the evaluation.
  Status Reset(const nlohmann::json& epochs);

 private:
  Status Write();
  std::string path_;
  std::vector<nlohmann::json> lines_;
  nlohmann::json evaluation_;
};

}  // namespace ringtrain::train
