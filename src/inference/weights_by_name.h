// Transfer learning: a job's "initial_weights" loaded into a freshly built model by name, as
// Keras' model.load_weights(path, by_name=True, skip_mismatch=...) does. The file is any of
// modelfiles/weights_file.h's formats, told apart by its first bytes: a Keras 3 .keras
// archive, a Keras .h5 file (save_weights or save), a TensorFlow.js model.json with its
// shards, or safetensors. Names the file gives with more scope than the model's
// ("sequential/dense/kernel:0") are matched as modelfiles/weight_names.h describes.
//
// Matching: a model weight "<layer name>/<weight name>" (its ParamInfo name) takes the
// file's tensor of the same name when the shapes agree. Model weights the file lacks keep
// their initial values (a new head); file tensors the model lacks are ignored (the
// pretrained model's own top). A tensor of the right name and another shape is an error,
// or, with skip_mismatch, skipped with a line of its own, as Keras warns per skipped
// weight. A file none of whose tensors matches is an error: it is not this model's.
//
// Threading: any thread; each call owns what it creates. Blocking: reads the file
// (disk I/O only). Errors are about Subject::kStorage (exit 6), name the path, and
// leave the model unchanged: NOT_FOUND (no file), DATA_LOSS (corrupt, or a NaN or
// infinity in a tensor that would be loaded), UNIMPLEMENTED (a dtype other than F32),
// FAILED_PRECONDITION (a shape mismatch without skip_mismatch, or nothing matches).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/status.h"
#include "nn/model.h"

namespace ringtrain::inference {

struct ByNameReport {
  std::vector<std::string> loaded;   // model weights set from the file
  std::vector<std::string> skipped;  // one line per weight skipped for its shape (skip_mismatch)
  std::vector<std::string> kept;     // model weights the file lacks: initial values kept
  std::vector<std::string> ignored;  // file tensors the model lacks
};

// The matching above, over tensors already read. `source` names where they came from.
StatusOr<ByNameReport> LoadWeightsByName(nn::Model* model, const std::map<std::string, checkpoint::Tensor>& tensors,
                                         const std::string& source, bool skip_mismatch);

// Reads the weights file at `path` (at most `max_bytes`; a tfjs model's shards together
// too) and loads it by name. The readers' errors (modelfiles/*.h) are about kStorage too.
StatusOr<ByNameReport> LoadInitialWeights(nn::Model* model, const std::string& path, bool skip_mismatch,
                                          uint64_t max_bytes);

// Log lines for a report: a summary, then each skipped weight.
std::vector<std::string> DescribeReport(const ByNameReport& report, const std::string& path);

}  // namespace ringtrain::inference
