#include "nn/regularizers/regularizer.h"

#include <cmath>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

constexpr double kDefaultFactor = 0.01;  // Keras' L1(l1=0.01), L2(l2=0.01), l1_l2()

// A factor of config: absent or null -> fallback; else a finite number >= 0.
StatusOr<double> Factor(const nlohmann::json& config, const char* key, double fallback, const std::string& ctx) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  // The gradient is float32: a factor past its range would overflow it.
  if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() <= 1e30)) {
    return InvalidArgumentError(ctx + ": '" + key + "' must be a number >= 0 (at most 1e30), got " + BriefDump(*it));
  }
  return it->get<double>();
}

StatusOr<Regularizer> FromObject(const nlohmann::json& j, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"class_name", "config", "module", "registered_name"}, ctx));
  auto cls = j.find("class_name");
  if (cls == j.end() || !cls->is_string()) {
    return InvalidArgumentError(ctx + ": 'class_name' must be \"L1\", \"L2\" or \"L1L2\", got " +
                                (cls == j.end() ? std::string("nothing") : BriefDump(*cls)));
  }
  nlohmann::json config = nlohmann::json::object();
  if (auto c = j.find("config"); c != j.end() && !c->is_null()) {
    if (!c->is_object()) return InvalidArgumentError(ctx + ": 'config' must be an object, got " + BriefDump(*c));
    config = *c;
  }
  const std::string name = cls->get<std::string>();
  const std::string cctx = ctx + " (" + name + ")";
  if (name == "L1" || name == "L2") {
    const char* key = name == "L1" ? "l1" : "l2";
    RT_RETURN_IF_ERROR(CheckKnownFields(config, {key, "l"}, cctx + " config"));
    if (config.contains(key) && config.contains("l")) {
      return InvalidArgumentError(cctx + ": give '" + key + "' or its old spelling 'l', not both");
    }
    RT_ASSIGN_OR_RETURN(double f, Factor(config, config.contains("l") ? "l" : key, kDefaultFactor, cctx));
    return name == "L1" ? Regularizer(f, 0) : Regularizer(0, f);
  }
  if (name == "L1L2") {
    RT_RETURN_IF_ERROR(CheckKnownFields(config, {"l1", "l2"}, cctx + " config"));
    RT_ASSIGN_OR_RETURN(double l1, Factor(config, "l1", 0.0, cctx));
    RT_ASSIGN_OR_RETURN(double l2, Factor(config, "l2", 0.0, cctx));
    return Regularizer(l1, l2);
  }
  return InvalidArgumentError(ctx + ": unsupported regularizer class_name " + BriefDump(*cls) +
                              " (supported: \"L1\", \"L2\", \"L1L2\")");
}

}  // namespace

StatusOr<Regularizer> Regularizer::FromJson(const nlohmann::json& j, const std::string& ctx) {
  StatusOr<Regularizer> r = Regularizer();
  if (j.is_null()) return r;
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "l1" || s == "L1") return Regularizer(kDefaultFactor, 0);
    if (s == "l2" || s == "L2") return Regularizer(0, kDefaultFactor);
    if (s == "l1_l2") return Regularizer(kDefaultFactor, kDefaultFactor);
    if (s == "l1l2" || s == "L1L2") return Regularizer(0, 0);
    r = InvalidArgumentError(ctx + ": unknown regularizer " + BriefDump(j) +
                             " (supported: \"l1\", \"l2\", \"l1_l2\", or {\"class_name\": \"L2\", \"config\": "
                             "{\"l2\": 0.01}})");
  } else if (j.is_object()) {
    r = FromObject(j, ctx);
  } else {
    r = InvalidArgumentError(ctx + ": must be a regularizer name such as \"l2\", an object {\"class_name\": \"L2\", "
                                   "\"config\": {\"l2\": 0.01}} or null, got " + BriefDump(j));
  }
  if (!r.ok()) return r.status().About(Subject::kConfig);
  return r;
}

double Regularizer::Penalty(const float* w, size_t n) const {
  double abs_sum = 0, square_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = w[i];
    abs_sum += std::abs(v);
    square_sum += v * v;
  }
  double penalty = 0;
  if (l1_ != 0) penalty += l1_ * abs_sum;
  if (l2_ != 0) penalty += l2_ * square_sum;
  return penalty;
}

void Regularizer::AddGradient(const float* w, size_t n, float scale, float* g) const {
  if (!active()) return;
  for (size_t i = 0; i < n; ++i) {
    const double v = w[i];
    const double sign = static_cast<double>((v > 0) - (v < 0));
    g[i] = static_cast<float>(g[i] + static_cast<double>(scale) * (l1_ * sign + 2.0 * l2_ * v));
  }
}

}  // namespace ringtrain::nn
