// Checked reads of the arguments the normalization and dropout layers share
// (BatchNormalization, LayerNormalization, Dropout): Keras' "axis", initializers that
// must keep their Keras defaults, and arguments ringtrain takes only as null. Errors are
// INVALID_ARGUMENT naming the caller's context and the field, like json_fields.h.
// None of these throw.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

// Keras' "axis" (an int or a list of ints; negative counts from the end; the batch
// dimension is axis 0) for an input of per-example rank `rank`. Returns how many
// trailing axes it names (1 for -1 or [rank]); absent -> 1. Refuses duplicates, the
// batch axis, out-of-range values and a set of axes that is not the trailing ones,
// naming `what_to_do` in the message.
StatusOr<int> GetTrailingAxes(const nlohmann::json& j, int rank, const std::string& ctx, const char* what_to_do);

// An initializer argument that must be Keras' default `name` ("zeros" or "ones"):
// absent, the string (any case, "Zeros" too) or {"class_name": "Zeros", "config": {}}.
Status CheckDefaultInitializer(const nlohmann::json& j, const char* key, const char* name, const std::string& ctx);

// An argument ringtrain accepts only as null (or absent): regularizers, constraints,
// noise_shape. `why` says what to do instead.
Status CheckNullOnly(const nlohmann::json& j, const char* key, const std::string& ctx, const char* why);

// A 64-bit hash of a string (FNV-1a), for per-layer random streams.
uint64_t HashName(const std::string& s);

}  // namespace ringtrain::nn
