// Any weights file a user may give, told apart by its first bytes (not its name):
//   "PK\x03\x04"            a Keras 3 .keras archive (keras_archive.h)
//   "\x89HDF\r\n\x1a\n"     a Keras HDF5 file, .h5 (keras_h5.h)
//   '{' (after blanks)      a TensorFlow.js model.json with its weight shards (tfjs_weights.h)
//   anything else           safetensors (checkpoint/safetensors.h), ringtrain's own format
//
// Threading: any thread. Blocking: disk I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "modelfiles/model_file.h"

namespace ringtrain::modelfiles {

enum class WeightsFormat { kSafetensors, kKerasArchive, kHdf5, kTfjs };

// The format of a file of `size` bytes that begins with `head` (its first 16 bytes; fewer
// for a shorter file).
WeightsFormat DetectWeightsFormat(const std::string& head, uint64_t size);
// "a safetensors file", "a Keras archive (.keras)", ...: for messages.
const char* WeightsFormatName(WeightsFormat format);

// Reads the file at `path`, of any format above, at most `max_bytes` long (a tfjs model's
// shards together too). `model_weight_names`: the model's ParamInfo names in order, to
// match names against (may be null: the file's own names). Errors are the readers', all
// about Subject::kStorage (exit 6), each naming the path; NOT_FOUND for a missing file.
StatusOr<ModelFile> ReadWeightsFile(const std::string& path, const std::vector<std::string>* model_weight_names,
                                    uint64_t max_bytes);

}  // namespace ringtrain::modelfiles
