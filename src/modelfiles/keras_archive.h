// Keras 3's .keras archive (keras.saving.save_model / model.save("x.keras")): a zip of
//   metadata.json      {"keras_version": "3.x.y", "date_saved": "2024-05-01@12:00:00"}
//   config.json        the model's config (serialize_keras_object of the model)
//   model.weights.h5   the weights in Keras 3's layout (keras3_layout.h)
// (and assets/ for layers with assets, which ringtrain's layers have none of). Read: the
// config's JSON text for the model translator, and the weights named "<layer>/<weight>".
// Written: an archive keras.saving.load_model opens (stored uncompressed, as Keras writes).
//
// Errors of the readers, all about Subject::kStorage (exit 6), naming the path and what to
// do: DATA_LOSS for a corrupt or truncated archive, a missing member, a config that is not
// a Keras model's, a weights file not in the layout; UNIMPLEMENTED for an archive whose
// weights are in .npz (weights_format="npz"). The writer: INVALID_ARGUMENT (no Subject)
// for a config or tensors that do not describe one model; the storage errors of
// env::WriteFileAtomically. Nothing throws.
//
// Threading: any thread (HDF5 calls are serialised, hdf5_file.h). Blocking: disk I/O.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"
#include "common/file.h"
#include "common/status.h"
#include "env/env.h"
#include "modelfiles/model_file.h"

namespace ringtrain::modelfiles {

// The archive at `path`, at most `max_bytes` long. `model_weight_names`: the model's
// ParamInfo names in order (may be null), for layer classes keras3_layout.h has no table for.
StatusOr<ModelFile> ReadKerasArchive(const std::string& path, const std::vector<std::string>* model_weight_names = nullptr,
                                     uint64_t max_bytes = kDefaultMaxFileBytes);
// Only the archive's config.json (the model, for the translator): the weights file is not
// read. The same errors as ReadKerasArchive's about the archive and its config.
StatusOr<std::string> ReadKerasArchiveConfig(const std::string& path, uint64_t max_bytes = kDefaultMaxFileBytes);
// The same over the archive's bytes (`path` names it in errors).
StatusOr<ModelFile> DecodeKerasArchive(const std::string& bytes, const std::string& path,
                                       const std::vector<std::string>* model_weight_names);

struct KerasArchiveInput {
  std::string config_json;                             // Keras 3 model config (config.json)
  std::map<std::string, checkpoint::Tensor> tensors;   // "<layer>/<weight>"
  std::vector<std::string> weight_order;               // the model's ParamInfo names, in order
  std::string keras_version = "3.5.0";                 // metadata.json's keras_version
  std::time_t saved_at = 0;                            // date_saved and the zip entries' times (UTC)
};

// A model in the compact form (nn/model_build.h) with its weights (ParamInfo order) as a
// .keras archive: config.json from Keras3ConfigFromCompact (keras3_config.h), saved at
// `saved_at`, written crash-safely. The errors of EncodeKerasArchive and WriteKerasArchive.
Status WriteKerasModel(const std::string& path, const nlohmann::json& compact_model,
                       const std::vector<checkpoint::TensorView>& weights, std::time_t saved_at,
                       env::Env* env = env::Default());

// The archive's bytes: equal inputs make equal bytes.
StatusOr<std::string> EncodeKerasArchive(const KerasArchiveInput& input);
// Encodes and writes crash-safely (env::WriteFileAtomically) to `path`.
Status WriteKerasArchive(const std::string& path, const KerasArchiveInput& input, env::Env* env = env::Default());

}  // namespace ringtrain::modelfiles
