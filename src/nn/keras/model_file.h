// Reading a model description file as people have it, into the compact model form
// (keras_json.h): the one place where a path becomes a model.
//
// Accepted forms of the file's JSON:
//  - Keras' model JSON, what model.to_json() writes (Keras 3, tf.keras 2, Keras 2.0+);
//  - that JSON as a JSON string: json.dump(model.to_json(), f) writes the text of the
//    model JSON as one quoted string. It is read as the model, with an INFO line;
//  - a TensorFlow.js model.json, {"modelTopology": ..., "weightsManifest": [...], ...}:
//    its modelTopology is the model, either {"class_name", "config", "keras_version",
//    "backend"} (tfjs' model.save(), Teachable Machine) or {"model_config": {...},
//    "training_config": ...} (the tensorflowjs converter). Its weightsManifest and the
//    file's directory (the manifest's paths are relative to it) are returned for the
//    weights reader.
//  - a Keras 3 `.keras` archive (a zip): its config.json is the model (the weights in it are
//    read by modelfiles/ when the archive is also the job's initial_weights).
//
// Errors (one line; nothing throws): the file cannot be read (missing, not a regular
// file, too large, an I/O error): ReadFile's status about Subject::kStorage (its message
// names the path); not JSON: ParseJson's INVALID_ARGUMENT naming the path; the content
// is not a model: INVALID_ARGUMENT "model.keras_json: ...". These two have no Subject:
// the caller's (a job file's model is kConfig).
//
// Blocking: reads one file. Threading: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

struct KerasModelFile {
  nlohmann::json compact;             // the compact model form
  std::vector<std::string> info;      // lines for the caller to log at INFO (what was read, how)
  nlohmann::json weights_manifest;    // a tfjs model.json's "weightsManifest"; null otherwise
  std::string directory;              // the tfjs model.json's directory (for the manifest's paths); "" otherwise
};

// Reads the file at `path` (a JSON file at most `max_bytes` long; a regular file only, as
// ReadFile).
StatusOr<KerasModelFile> ReadKerasModelFile(const std::string& path, uint64_t max_bytes);

// The same for a model JSON already parsed (a job's inline "keras_json"), any of the
// forms above; `directory` is where a tfjs manifest's paths are relative to.
StatusOr<KerasModelFile> KerasModelFromJson(const nlohmann::json& value, const std::string& directory);

}  // namespace ringtrain::nn
