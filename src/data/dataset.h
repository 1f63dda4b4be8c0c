// Data sources (MNIST IDX, synthetic), sharding across workers with tf.data's
// AutoShardPolicy meanings, and a deterministic shuffled batch iterator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::data {

enum class ShardPolicy { kAuto, kFile, kData, kOff };
// "AUTO" | "FILE" | "DATA" | "OFF" (case-insensitive).
StatusOr<ShardPolicy> ParseShardPolicy(const std::string& name);
const char* ShardPolicyName(ShardPolicy p);

// In memory, decoded: pixel values scaled to [0, 1] as the seed tutorial does (x / 255).
struct Dataset {
  std::vector<int> example_shape;  // e.g. {28, 28}
  size_t example_size = 0;         // product of example_shape
  int num_classes = 0;
  std::vector<float> images;       // size() * example_size
  std::vector<int32_t> labels;     // size()
  size_t size() const { return labels.size(); }
};

struct ShardResult {
  Dataset data;               // this worker's shard
  ShardPolicy applied;        // FILE, DATA or OFF (AUTO resolved)
  std::string description;    // e.g. "AUTO -> DATA: 1 file < 2 workers; worker 1 keeps 4000 of 8000 examples"
};

// Loads the part of the source `source_json` (a "train"/"eval" entry of the job) that
// belongs to worker `index` of `num_workers`. Relative paths resolve against base_dir.
// Errors: INVALID_ARGUMENT for a bad spec (naming the field), NOT_FOUND for a missing
// file (naming the path), DATA_LOSS for a malformed file.
StatusOr<ShardResult> LoadShard(const nlohmann::json& source_json, const std::string& base_dir,
                                ShardPolicy policy, int index, int num_workers);

// Endless, deterministic batches over a dataset: each pass over the data is a
// permutation derived from (seed, pass) only, so the same seed gives the same order
// on every run; a batch that reaches the end of a pass continues into the next
// (tf.data's shuffle().repeat().batch()).
class BatchIterator {
 public:
  BatchIterator(const Dataset* data, int batch_size, uint64_t seed, bool shuffle);  // data not owned
  // Fills images [batch, example_size] and labels [batch].
  void Next(float* images, int32_t* labels);
  // Position, for resuming: passes completed and offset within the current pass.
  uint64_t pass() const { return pass_; }
  size_t offset() const { return offset_; }
  void Seek(uint64_t pass, size_t offset);

 private:
  void Reshuffle();
  const Dataset* data_;
  int batch_size_;
  uint64_t seed_;
  bool shuffle_;
  uint64_t pass_ = 0;
  size_t offset_ = 0;
  std::vector<uint32_t> order_;
};

}  // namespace ringtrain::data
