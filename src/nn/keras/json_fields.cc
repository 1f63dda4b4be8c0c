#include "nn/keras/json_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace ringtrain::nn {
namespace {

// Accepts JSON integers only (10, not 10.5 or "10"), within int range.
bool AsInt(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max()) return false;
    *out = i;
    return true;
  }
  return false;
}

// 1 -> "1", 0.5 -> "0.5".
std::string FormatNumber(double v) {
  if (std::isinf(v)) return "inf";
  if (v == std::floor(v) && std::abs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  return nlohmann::json(v).dump();
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::string BriefDump(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

Status CheckKnownFields(const nlohmann::json& j, std::initializer_list<const char*> allowed,
                        const std::string& ctx) {
  if (!j.is_object()) return InvalidArgumentError(ctx + ": must be a JSON object, got " + BriefDump(j));
  for (const auto& item : j.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || item.key() == a;
    if (known) continue;
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + "'" + a + "'";
    return InvalidArgumentError(ctx + ": unknown field '" + item.key() + "' (allowed: " + list + ")");
  }
  return Status::Ok();
}

StatusOr<int> GetPositiveInt(const nlohmann::json& j, const char* key, int fallback, const std::string& ctx,
                             int max) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (fallback > 0) return fallback;
    return InvalidArgumentError(ctx + ": missing '" + key + "' (a positive integer)");
  }
  int64_t v = 0;
  if (!AsInt(*it, &v) || v <= 0 || v > max) {
    return InvalidArgumentError(ctx + ": '" + key + "' must be a positive integer (at most " + std::to_string(max) +
                                "), got " + BriefDump(*it));
  }
  return static_cast<int>(v);
}

StatusOr<std::pair<int, int>> GetIntPair(const nlohmann::json& j, const char* key, std::pair<int, int> fallback,
                                         const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (fallback.first > 0) return fallback;
    return InvalidArgumentError(ctx + ": missing '" + key + "' (an integer or a pair [height, width])");
  }
  const int kMax = 1 << 16;
  auto bad = [&]() {
    return InvalidArgumentError(ctx + ": '" + key +
                                "' must be a positive integer or a pair of positive integers [height, width], got " +
                                BriefDump(*it));
  };
  int64_t a = 0, b = 0;
  if (AsInt(*it, &a)) {
    b = a;
  } else if (it->is_array() && it->size() == 2 && AsInt((*it)[0], &a) && AsInt((*it)[1], &b)) {
  } else {
    return bad();
  }
  if (a <= 0 || b <= 0 || a > kMax || b > kMax) return bad();
  return std::make_pair(static_cast<int>(a), static_cast<int>(b));
}

StatusOr<bool> GetBool(const nlohmann::json& j, const char* key, bool fallback, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_boolean()) {
    return InvalidArgumentError(ctx + ": '" + key + "' must be true or false, got " + BriefDump(*it));
  }
  return it->get<bool>();
}

StatusOr<double> GetNumber(const nlohmann::json& j, const char* key, double fallback, double lo, bool lo_open,
                           double hi, bool hi_open, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  double v = it->is_number() ? it->get<double>() : std::nan("");
  bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  if (!ok) {
    std::string range = std::string(lo_open ? "(" : "[") + FormatNumber(lo) + ", " + FormatNumber(hi) +
                        (hi_open ? ")" : "]");
    std::string what = (lo == 0 && lo_open && std::isinf(hi)) ? "a positive number" : "a number in " + range;
    return InvalidArgumentError(ctx + ": '" + key + "' must be " + what + ", got " + BriefDump(*it));
  }
  // The updates run in float32: the value must be one (converting a larger double to
  // float is undefined), and a positive one must not round to zero.
  if (std::abs(v) > std::numeric_limits<float>::max()) {
    return InvalidArgumentError(ctx + ": '" + key + "' must be at most 3.4e38 in magnitude (the float32 range), got " +
                                BriefDump(*it));
  }
  if (v > 0 && static_cast<float>(v) == 0.0f) {
    return InvalidArgumentError(ctx + ": '" + key + "' is too small for float32 (it rounds to 0), got " +
                                BriefDump(*it));
  }
  return v;
}

StatusOr<Activation> GetActivation(const nlohmann::json& j, const std::string& ctx) {
  static const std::pair<const char*, Activation> kNames[] = {
      {"linear", Activation::kLinear},     {"relu", Activation::kRelu},           {"relu6", Activation::kRelu6},
      {"sigmoid", Activation::kSigmoid},   {"tanh", Activation::kTanh},           {"softmax", Activation::kSoftmax},
      {"gelu", Activation::kGelu},         {"gelu_new", Activation::kGeluTanh},   {"swish", Activation::kSwish},
      {"silu", Activation::kSwish},        {"elu", Activation::kElu},             {"selu", Activation::kSelu},
      {"leaky_relu", Activation::kLeakyRelu}, {"softplus", Activation::kSoftplus}, {"softsign", Activation::kSoftsign},
      {"mish", Activation::kMish},         {"exponential", Activation::kExponential},
  };
  auto it = j.find("activation");
  if (it == j.end() || it->is_null()) return Activation::kLinear;
  if (it->is_string()) {
    const std::string a = Lower(it->get<std::string>());
    for (const auto& [name, act] : kNames) {
      if (a == name) return act;
    }
  }
  std::string list;
  for (const auto& [name, act] : kNames) list += std::string(list.empty() ? "" : ", ") + "\"" + name + "\"";
  return InvalidArgumentError(ctx + ": unknown 'activation' " + BriefDump(*it) + " (supported: " + list +
                              ", or leave it out for linear)");
}

Status RequireNull(const nlohmann::json& j, const char* key, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  return InvalidArgumentError(ctx + ": '" + key + "' " + BriefDump(*it) +
                              " is not supported on this layer; leave it out (or null)");
}

StatusOr<Padding> GetPadding(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("padding");
  if (it == j.end()) return Padding::kValid;
  if (it->is_string()) {
    std::string p = Lower(it->get<std::string>());
    if (p == "valid") return Padding::kValid;
    if (p == "same") return Padding::kSame;
  }
  return InvalidArgumentError(ctx + ": unknown 'padding' " + BriefDump(*it) + " (supported: \"valid\", \"same\")");
}

}  // namespace ringtrain::nn
