// Checked reads of job-file fields for layers and optimizers. Every error is an
// INVALID_ARGUMENT whose message starts with the caller's context ("model.layers[2]
// (dense)" or "optimizer") and names the field, so a user can find the typo.
// None of these throw.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "ops/activation.h"

namespace ringtrain::nn {

// Keras' activations by name (ops/activation.h; backends/cpu/activations.h computes them on the CPU).
using Activation = ::ringtrain::ops::Activation;
enum class Padding { kValid, kSame };

// `j` must be an object whose keys are all in `allowed`.
Status CheckKnownFields(const nlohmann::json& j, std::initializer_list<const char*> allowed,
                        const std::string& ctx);

// A positive integer (at most `max`). Absent -> `fallback` when > 0, else "missing".
StatusOr<int> GetPositiveInt(const nlohmann::json& j, const char* key, int fallback, const std::string& ctx,
                             int max = 1 << 24);
// An int or [a, b] of positive ints ("kernel_size": 3 or [3, 5]). Absent -> fallback
// when fallback.first > 0, else "missing".
StatusOr<std::pair<int, int>> GetIntPair(const nlohmann::json& j, const char* key, std::pair<int, int> fallback,
                                         const std::string& ctx);
StatusOr<bool> GetBool(const nlohmann::json& j, const char* key, bool fallback, const std::string& ctx);
// A finite number in [lo, hi] (open at either end when the *_open flag is set).
StatusOr<double> GetNumber(const nlohmann::json& j, const char* key, double fallback, double lo, bool lo_open,
                           double hi, bool hi_open, const std::string& ctx);
// "activation": a Keras activation name (see Activation) | null | absent (linear).
StatusOr<Activation> GetActivation(const nlohmann::json& j, const std::string& ctx);
// j[key] absent or null; otherwise "<key> is not supported", naming the value.
Status RequireNull(const nlohmann::json& j, const char* key, const std::string& ctx);
// "padding": "valid" (default) | "same", case-insensitive like Keras.
StatusOr<Padding> GetPadding(const nlohmann::json& j, const std::string& ctx);

// A short rendering of a JSON value for error messages.
std::string BriefDump(const nlohmann::json& v);

}  // namespace ringtrain::nn
