// `ringtrain bench train`'s summary of a training run: the chief's history records
// (one JSON object per epoch, as train::HistoryFile writes them) reduced to the
// figures a training benchmark reports, the first `warmup_epochs` excluded.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::bench {

struct TrainEpoch {
  int epoch = 0;
  double images_per_sec = 0;
  double step_ms = 0;
  double comm_wait_share = 0;
};

struct TrainSummary {
  std::vector<TrainEpoch> epochs;  // every epoch, warm-up included
  int warmup_epochs = 0;
  // Means over the epochs after the warm-up.
  double images_per_sec = 0;
  double step_ms = 0;
  double comm_wait_share = 0;
};

// Reads the history file's lines (the evaluation line is skipped). INVALID_ARGUMENT if
// an epoch record lacks a figure, or if no epoch is left after the warm-up (the message
// says to train more epochs).
StatusOr<TrainSummary> SummarizeTraining(const std::vector<nlohmann::json>& records, int warmup_epochs);
// Parses a history file's text, one JSON object per line.
StatusOr<std::vector<nlohmann::json>> ParseHistory(const std::string& text);

// The table and the RESULT line `ringtrain bench train` prints.
std::string FormatTrainSummary(const TrainSummary& s, const std::string& job, int workers);

}  // namespace ringtrain::bench
