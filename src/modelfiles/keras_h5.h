// Keras 2's HDF5 files: model.save_weights("x.h5") (the layers at the root) and
// model.save("x.h5") (the layers under "model_weights", the model's JSON in the root's
// "model_config" attribute); Keras 3's model.save("x.h5") writes the same layout.
//
//   attribute layer_names = ["conv2d", "dense", ...]   (or chunks layer_names0, 1, ...)
//   <layer>/                 attribute weight_names = ["conv2d/kernel:0", "conv2d/bias:0"]
//   <layer>/<weight name>    the dataset ("conv2d/conv2d/kernel:0")
//
// A weight is named "<layer>/<weight>" with the ":0" dropped; a layer that is a nested model
// (its weight names carry its inner layers' names, "dense_1/kernel:0" under "sequential")
// gives its inner layers' names, as ringtrain flattens nested models. Names then go through
// NameForModel (weight_names.h) against the model's weights.
//
// Keras 3's model.save_weights("x.weights.h5") is told apart (no layer_names, a "layers"
// group): its groups are named by class and position only (keras3_layout.h), so it can be
// read only with the model config: a .keras archive carries one.
//
// Errors, all about Subject::kStorage (exit 6), naming the path: DATA_LOSS for a file not in
// this layout or corrupt; UNIMPLEMENTED for a Keras 3 weights-only file. Nothing throws.
// Threading: any thread (HDF5 calls are serialised, hdf5_file.h). Blocking: disk I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "modelfiles/hdf5_file.h"
#include "modelfiles/model_file.h"

namespace ringtrain::modelfiles {

// Reads an open Keras HDF5 file (`path` names it in errors). `model_weight_names`: the
// model's ParamInfo names (may be null). At most `budget` values are read.
StatusOr<ModelFile> ReadKerasH5(const H5File& file, const std::string& path,
                                const std::vector<std::string>* model_weight_names, uint64_t budget);

}  // namespace ringtrain::modelfiles
