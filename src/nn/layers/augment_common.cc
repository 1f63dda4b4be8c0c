#include "nn/layers/augment_common.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/augment_draws.h"
#include "common/splitmix.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn::augment {

StatusOr<uint64_t> LayerKey(const nlohmann::json& j, const std::string& name, const std::string& ctx) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ULL;
  auto it = j.find("seed");
  if (it == j.end() || it->is_null()) return SplitMix64Finalize(h);
  if (!it->is_number_integer()) {
    return InvalidArgumentError(ctx + ": 'seed' must be an integer or null, got " + BriefDump(*it));
  }
  return backends::cpu::Absorb(SplitMix64Finalize(h), static_cast<uint64_t>(it->get<int64_t>()), 7);
}

StatusOr<std::pair<double, double>> GetFactor(const nlohmann::json& j, const char* key, const std::string& ctx) {
  const std::string want = std::string("'") + key +
                           "' must be a number in [-1, 1] or a pair [lower, upper] of them (fractions; e.g. 0.1 "
                           "means [-0.1, 0.1])";
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return InvalidArgumentError(ctx + ": missing " + want);
  auto in_range = [](const nlohmann::json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= -1.0 && v.get<double>() <= 1.0;
  };
  if (it->is_array()) {
    if (it->size() != 2 || !in_range((*it)[0]) || !in_range((*it)[1])) {
      return InvalidArgumentError(ctx + ": " + want + ", got " + BriefDump(*it));
    }
    const double a = (*it)[0].get<double>(), b = (*it)[1].get<double>();
    return std::make_pair(std::min(a, b), std::max(a, b));
  }
  if (!in_range(*it)) return InvalidArgumentError(ctx + ": " + want + ", got " + BriefDump(*it));
  const double f = std::abs(it->get<double>());
  return std::make_pair(-f, f);
}

Status CheckImageInput(const Shape& in, const char* class_name, const std::string& ctx) {
  if (in.size() == 3) return Status::Ok();
  std::string hint;
  if (in.size() == 2) {
    hint = "; add {\"type\": \"reshape\", \"target_shape\": [" + std::to_string(in[0]) + ", " + std::to_string(in[1]) +
           ", 1]} before it";
  }
  return InvalidArgumentError(ctx + ": " + class_name +
                              " needs an image per example (height, width, channels; channels last), got " +
                              ShapeToString(in) + hint);
}

StatusOr<ops::Op::FillMode> GetFillMode(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("fill_mode");
  if (it == j.end()) return ops::Op::FillMode::kReflect;
  if (it->is_string()) {
    const std::string v = it->get<std::string>();
    if (v == "reflect") return ops::Op::FillMode::kReflect;
    if (v == "wrap") return ops::Op::FillMode::kWrap;
    if (v == "constant") return ops::Op::FillMode::kConstant;
    if (v == "nearest") return ops::Op::FillMode::kNearest;
  }
  return InvalidArgumentError(ctx + ": 'fill_mode' must be \"reflect\" (the default), \"wrap\", \"constant\" or "
                              "\"nearest\", got " + BriefDump(*it));
}

StatusOr<ops::Op::Interpolation> GetInterpolation(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("interpolation");
  if (it == j.end()) return ops::Op::Interpolation::kBilinear;
  if (*it == "bilinear") return ops::Op::Interpolation::kBilinear;
  if (*it == "nearest") return ops::Op::Interpolation::kNearest;
  return InvalidArgumentError(ctx + ": 'interpolation' must be \"bilinear\" (the default) or \"nearest\", got " +
                              BriefDump(*it));
}

}  // namespace ringtrain::nn::augment
