// Everything needed to continue training exactly where it stopped, in memory. All
// workers hold identical state at a step boundary (synchronous data parallelism with
// deterministic updates), so one worker's TrainState stands for the whole cluster.
//
// The data order is not stored: every worker's position in its shard is a function of
// global_step (global_step * batch_size_per_worker examples consumed, one endless
// BatchIterator from the job's seed and the worker's index), and the learning-rate
// schedule position is optimizer_iterations.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ringtrain::backup {

struct TrainState {
  int64_t global_step = 0;  // training steps completed since the job began
  std::vector<float> params;  // the model's flat parameter buffer (nn::Model::params())
  // The optimizer's named state buffers in the order nn::Optimizer::state() lists them
  // ("momentum"; "m", "v"), each as long as params; empty before the first update.
  std::vector<std::pair<std::string, std::vector<float>>> optimizer_slots;
  int64_t optimizer_iterations = 0;
  // The current epoch's metrics so far, summed over every worker (0 at an epoch start):
  // the loss sum in float64, the counts exactly.
  double epoch_loss_sum = 0;
  int64_t epoch_correct = 0, epoch_examples = 0;
  // The job's metrics' sums so far (engine::Objective::num_sums() of them, summed over
  // every worker); empty in backups written before metrics were configurable, which
  // only counted `epoch_correct` (the argmax accuracy's hits).
  std::vector<double> epoch_metric_sums;
  // Completed epochs' records, as the history file holds them (a JSON array).
  nlohmann::json history = nlohmann::json::array();
};

}  // namespace ringtrain::backup
