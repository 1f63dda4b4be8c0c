#include "nn/layers/augment_common.h"

#include <algorithm>
#include <cmath>

#include "nn/initializers/init.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn::augment {
namespace {

// Absorbs one more counter into the hash: each position gets its own odd multiplier,
// so (a, b) and (b, a) differ.
uint64_t Absorb(uint64_t h, uint64_t v, uint64_t position) {
  return SplitMix64Finalize(h ^ SplitMix64Finalize(v + (position + 1) * 0x9E3779B97F4A7C15ULL));
}

}  // namespace

StatusOr<uint64_t> LayerKey(const nlohmann::json& j, const std::string& name, const std::string& ctx) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ULL;
  auto it = j.find("seed");
  if (it == j.end() || it->is_null()) return SplitMix64Finalize(h);
  if (!it->is_number_integer()) {
    return InvalidArgumentError(ctx + ": 'seed' must be an integer or null, got " + BriefDump(*it));
  }
  return Absorb(SplitMix64Finalize(h), static_cast<uint64_t>(it->get<int64_t>()), 7);
}

Rng ExampleRng(const StepContext& c, uint64_t layer_key, int64_t example) {
  uint64_t h = Absorb(0, static_cast<uint64_t>(c.step), 0);
  h = Absorb(h, static_cast<uint64_t>(c.replica), 1);
  h = Absorb(h, layer_key, 2);
  h = Absorb(h, static_cast<uint64_t>(example), 3);
  return Rng(c.seed, h);
}

float UniformIn(Rng& rng, double lo, double hi) {
  return static_cast<float>(lo + (hi - lo) * static_cast<double>(rng.Uniform()));
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

}  // namespace ringtrain::nn::augment
