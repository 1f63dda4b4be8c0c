// Loads MNIST-style IDX image/label file pairs into memory as raw bytes; the
// sharding code (load_shard.cc) picks examples from them and scales to floats.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "data/source_spec.h"

namespace ringtrain::data {

// MNIST's labels are digits.
constexpr int kMnistClasses = 10;

struct RawExamples {
  uint32_t rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // size() * rows * cols
  std::vector<int32_t> labels;
  size_t size() const { return labels.size(); }
};

// Reads pairs `files` (indices into spec.images/labels) and concatenates them in
// the given order. NOT_FOUND / DATA_LOSS from the files (naming path and field),
// DATA_LOSS for a label >= 10 or counts that differ between a pair, INVALID_ARGUMENT
// for pairs whose image sizes differ.
StatusOr<RawExamples> LoadMnistFiles(const SourceSpec& spec, const std::vector<int64_t>& files);

}  // namespace ringtrain::data
