#include "nn/layers/norm_fields.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

namespace {

std::string Lower(std::string t) {
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t;
}

}  // namespace

StatusOr<int> GetTrailingAxes(const nlohmann::json& j, int rank, const std::string& ctx, const char* what_to_do) {
  auto it = j.find("axis");
  if (it == j.end()) return 1;
  std::vector<int64_t> raw;
  if (it->is_number_integer()) {
    raw.push_back(it->get<int64_t>());
  } else if (it->is_array() && !it->empty() && it->size() <= 8) {
    for (const auto& a : *it) {
      if (!a.is_number_integer()) {
        raw.clear();  // reported below
        break;
      }
      raw.push_back(a.get<int64_t>());
    }
  }
  const std::string shape = "(batch and " + std::to_string(rank) + " per-example dimensions)";
  if (raw.empty()) {
    return InvalidArgumentError(ctx + ": 'axis' must be an integer or a list of integers, got " + BriefDump(*it));
  }
  std::vector<int64_t> axes;
  for (int64_t a : raw) {
    const int64_t norm = a < 0 ? a + rank + 1 : a;
    if (norm < 1 || norm > rank) {
      return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(*it) + " is out of range for an input of rank " +
                                  std::to_string(rank + 1) + " " + shape + (norm == 0 ? "; axis 0 is the batch" : "") +
                                  "; " + what_to_do);
    }
    if (std::find(axes.begin(), axes.end(), norm) != axes.end()) {
      return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(*it) + " names an axis twice");
    }
    axes.push_back(norm);
  }
  std::sort(axes.begin(), axes.end());
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] != rank - static_cast<int64_t>(axes.size()) + 1 + static_cast<int64_t>(k)) {
      return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(*it) + " is not supported; " + what_to_do);
    }
  }
  return static_cast<int>(axes.size());
}

Status CheckDefaultInitializer(const nlohmann::json& j, const char* key, const char* name, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  const std::string want = Lower(name);
  bool ok = false;
  if (it->is_string()) {
    ok = Lower(it->get<std::string>()) == want;
  } else if (it->is_object()) {
    auto cls = it->find("class_name");
    auto config = it->find("config");
    ok = cls != it->end() && cls->is_string() && Lower(cls->get<std::string>()) == want &&
         (config == it->end() || config->is_null() || (config->is_object() && config->empty()));
    for (const auto& item : it->items()) {
      const std::string& k = item.key();
      ok = ok && (k == "class_name" || k == "config" || k == "module" || k == "registered_name");
    }
  }
  if (ok) return Status::Ok();
  return InvalidArgumentError(ctx + ": '" + key + "' " + BriefDump(*it) + " is not supported; only Keras' default \"" +
                              name + "\" is: remove the argument");
}

Status CheckNullOnly(const nlohmann::json& j, const char* key, const std::string& ctx, const char* why) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  return InvalidArgumentError(ctx + ": '" + key + "' is " + BriefDump(*it) + ", which is not supported; " + why);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace ringtrain::nn
