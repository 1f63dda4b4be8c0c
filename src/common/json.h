// JSON that comes from outside the process -- job files, TF_CONFIG, file headers,
// backup metadata, a peer's job -- is parsed here and only here, so that no nlohmann
// exception ever escapes: a syntax error, a number out of range (1e400, -1e400, a
// 400-digit integer: nlohmann's out_of_range 406) and nesting too deep to handle
// safely all come back as one INVALID_ARGUMENT line that names what was parsed.
//
// The checked readers below take a parsed value and never throw either; callers wrap
// their messages with the field's name. Integers must be JSON integers (10, not 10.0,
// 1e1, 2.5 or "10"): nlohmann parses 1e30 and 20-digit literals above 2^64 as floats,
// so those are refused as "not an integer" instead of being truncated.
//
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain {

// Deeper nesting is refused before parsing: nlohmann copies, compares and prints
// values recursively, so a hostile "[[[[..." could otherwise overflow the stack later.
constexpr int kMaxJsonDepth = 128;

// Parses `text`. On failure INVALID_ARGUMENT "<what>: not valid JSON (...)" or
// "<what>: the number 1e400 is out of range ..." or "<what>: nested deeper than 128
// levels". Catches std::bad_alloc as well (RESOURCE_EXHAUSTED).
StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what);

// The value when `v` is a JSON integer within [lo, hi]; nullopt otherwise (a float,
// 1e30, a 20-digit literal above 2^64, a string, out of range).
std::optional<int64_t> JsonInt(const nlohmann::json& v, int64_t lo, int64_t hi);
// The same for unsigned 64-bit values (seeds).
std::optional<uint64_t> JsonUint(const nlohmann::json& v);
// The value when `v` is a finite JSON number (integer or float); nullopt otherwise.
std::optional<double> JsonNumber(const nlohmann::json& v);

// A short rendering of a value for error messages (at most 60 characters; invalid
// UTF-8 replaced), so a hostile value cannot flood the error line.
std::string JsonBrief(const nlohmann::json& v);

}  // namespace ringtrain
