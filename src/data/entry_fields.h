// What every source parser (source_spec.cc, image_folder.cc, tfrecord_source.cc,
// numpy_source.cc, keras_dataset.cc, ...) needs to read a job's source entry the same way:
// one form of error, one check for unknown keys, one way to resolve paths.
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::data::entry {

// The most classes a source's "num_classes" may declare or its labels imply (a stray
// huge label would otherwise size the model's output layer).
constexpr int64_t kMaxNumClasses = 1 << 20;

// Everything wrong with an entry is the job file's: INVALID_ARGUMENT about kConfig,
// "data.train.image_size: must be ...".
Status Invalid(const std::string& field, const std::string& what);

// Rejects a key of `j` not in `allowed`, naming it and listing the valid ones:
// "data.train.colour_mode: unknown key for format "image_folder" (a typo?); valid keys: ...".
// `what` completes "unknown key for ...".
Status CheckKeys(const nlohmann::json& j, const std::string& field, const std::set<std::string>& allowed,
                 const std::string& what);
// CheckKeys for a source's top-level keys: what = format "<format>".
Status CheckFormatKeys(const nlohmann::json& j, const std::string& field, const std::set<std::string>& allowed,
                       const std::string& format);

// `p` made absolute against base_dir (empty: the current directory), normalised. Touches
// no file.
std::string ResolvePath(const std::string& p, const std::string& base_dir);

}  // namespace ringtrain::data::entry
