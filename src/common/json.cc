#include "common/json.h"

#include <cmath>
#include <limits>
#include <new>

namespace ringtrain {
namespace {

// The deepest nesting of arrays and objects in `text`, counting brackets outside
// strings. Stops counting at limit + 1. Malformed text is the parser's business.
int NestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the prefix
// means nothing to a user.
std::string Plain(const char* what) {
  std::string s(what);
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  // The message quotes the offending token, which may be a 400-digit number.
  if (s.size() > 160) s = s.substr(0, 150) + "...'";
  return s;
}

}  // namespace

StatusOr<nlohmann::json> ParseJson(std::string_view text, const std::string& what) {
  if (NestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    return InvalidArgumentError(what + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                " levels; nothing ringtrain reads needs that many");
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    return InvalidArgumentError(what + ": not valid JSON (" + Plain(e.what()) + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: "number overflow parsing '1e400'" -- a literal beyond a double's range.
    return InvalidArgumentError(what + ": a number is out of range (" + Plain(e.what()) +
                                "); JSON numbers must lie within about +-1.8e308, and integers that must be exact "
                                "within 64 bits");
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(what + ": not valid JSON (" + Plain(e.what()) + ")");
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(what + ": out of memory while parsing " + std::to_string(text.size()) +
                                  " bytes of JSON");
  }
}

std::optional<int64_t> JsonInt(const nlohmann::json& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else {
    return std::nullopt;
  }
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

std::optional<uint64_t> JsonUint(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

std::optional<double> JsonNumber(const nlohmann::json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::string JsonBrief(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace ringtrain
