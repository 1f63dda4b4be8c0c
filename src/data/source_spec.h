// The "train"/"eval" source entry of a job file, parsed and validated. Two formats:
//
//   {"format": "mnist_idx", "images": "t10k-images-idx3-ubyte.gz" | [..],
//    "labels": "t10k-labels-idx1-ubyte.gz" | [..], "first": 0, "count": 8000}
//     images/labels: one path or equal-length lists (pair j = file j). first/count
//     (optional; default: everything) select a range of the files' concatenated
//     examples, like tf.data's skip/take applied before sharding.
//
//   {"format": "synthetic", "count": 4096, "shape": [28, 28], "classes": 10,
//    "seed": 7, "task": 0, "noise": 0.35, "first": 0, "files": 1}
//     Examples with ids first .. first+count-1 drawn with `seed` from the task
//     numbered `task` (see synthetic.h); `count` is required, the rest optional
//     (defaults shown). A held-out split of the same task: another seed, or the same
//     seed with a `first` past the training ids. `files` splits the ids into that
//     many contiguous "virtual files" of (nearly) equal size so FILE sharding applies
//     to synthetic data too; first/count may be combined with it.
//
// Unknown keys are rejected so typos do not silently change a run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/synthetic.h"

namespace ringtrain::data {

struct SourceSpec {
  enum class Format { kMnistIdx, kSynthetic };
  Format format = Format::kMnistIdx;
  std::string field;  // where it came from in the job file, e.g. "data.train"

  // mnist_idx: absolute paths, and the job-file field each came from.
  std::vector<std::string> images, labels;
  std::vector<std::string> image_fields, label_fields;
  std::optional<int64_t> first, count;  // as given; synthetic: always set

  // synthetic
  SyntheticParams synthetic;
  int64_t virtual_files = 1;

  int64_t num_files() const {
    return format == Format::kMnistIdx ? static_cast<int64_t>(images.size()) : virtual_files;
  }
};

// INVALID_ARGUMENT naming the field ("data.train.count: ...") for anything malformed.
// Relative paths resolve against base_dir (empty: the current directory). Does not
// touch the file system beyond making paths absolute.
StatusOr<SourceSpec> ParseSourceSpec(const nlohmann::json& source, const std::string& base_dir,
                                     const std::string& field);

}  // namespace ringtrain::data
