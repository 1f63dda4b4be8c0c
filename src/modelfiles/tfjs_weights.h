// TensorFlow.js weights: a model.json's "weightsManifest" and the binary shards it lists.
//
// The manifest is [{"paths": ["group1-shard1of2.bin", ...], "weights": [{"name", "shape",
// "dtype", "quantization"?}, ...]}, ...]. Each group's shards, read from the directory of
// model.json and concatenated in order, hold the group's weights back to back, little-endian.
// Weights are decoded as tfjs-core's io.decodeWeights does: float32 as is; int32 and bool
// converted to float; quantized weights ({"dtype": "uint8"|"uint16", "scale", "min"}) as
// q * scale + min (in double precision, rounded once to float32, as JavaScript computes
// it), {"dtype": "float16"} exactly widened. Names go through NameForModel (weight_names.h).
//
// Errors, all about Subject::kStorage (exit 6), one line naming the file and what to do:
// DATA_LOSS for JSON that is not a model.json with a manifest and for a shard shorter than
// the manifest needs; NOT_FOUND for a missing shard;
// UNIMPLEMENTED for a dtype or quantization tfjs does not define for model weights
// ("string", "complex64", ...). Nothing throws.
//
// Threading: any thread. Blocking: reads the shards (disk I/O).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "common/status.h"
#include "modelfiles/model_file.h"

namespace ringtrain::modelfiles {

// `json_text` is the content of the model.json at `path` (read by the caller). The shards
// together may hold at most `max_bytes`. `model_names` as NameForModel's (may be null).
StatusOr<ModelFile> ReadTfjsModel(const std::string& path, const std::string& json_text,
                                  const std::set<std::string>* model_names, uint64_t max_bytes);

// A half-precision value (IEEE 754 binary16 bits) as float32, exactly.
float HalfToFloat(uint16_t h);

}  // namespace ringtrain::modelfiles
