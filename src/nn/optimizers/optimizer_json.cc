// Optimizer::FromJson: Keras 3's argument names and defaults, tf.keras 2's where they
// differ, every error naming the field.
#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "nn/optimizers/adagrad.h"
#include "nn/optimizers/adam.h"
#include "nn/keras/json_fields.h"
#include "nn/optimizers/nadam.h"
#include "nn/optimizers/optimizer.h"
#include "nn/optimizers/rmsprop.h"
#include "nn/optimizers/sgd.h"

namespace ringtrain::nn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr char kCtx[] = "optimizer";
constexpr char kTypes[] = "\"sgd\", \"adam\", \"adamw\", \"rmsprop\", \"adagrad\" or \"nadam\"";

// Arguments of Keras' base optimizer (and tf.keras 2's) that every type takes.
const std::vector<std::string> kCommonFields = {
    "type",    "name",   "learning_rate", "weight_decay",           "clipnorm",          "clipvalue",
    "global_clipnorm", "use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
    "gradient_accumulation_steps", "jit_compile", "is_legacy_optimizer", "decay"};

Status CheckFields(const nlohmann::json& j, const std::vector<std::string>& own) {
  const std::string ctx = kCtx;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    if (std::find(kCommonFields.begin(), kCommonFields.end(), key) != kCommonFields.end()) continue;
    if (key == "lr") {
      return InvalidArgumentError(ctx + ": unknown field 'lr'; Keras 3 names it 'learning_rate'");
    }
    std::string list;
    for (const auto& a : own) list += "'" + a + "', ";
    return InvalidArgumentError(ctx + ": unknown field '" + key + "' (this type takes " + list +
                                "'learning_rate', 'weight_decay', 'clipnorm', 'clipvalue', 'global_clipnorm')");
  }
  return Status::Ok();
}

bool IsNullOrAbsent(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null();
}

// null or absent -> nullopt; else a number in [0, inf) (positive when `positive`).
StatusOr<std::optional<double>> GetOptionalNumber(const nlohmann::json& j, const char* key, bool positive) {
  if (IsNullOrAbsent(j, key)) return std::optional<double>();
  auto v = GetNumber(j, key, 0, 0, positive, kInf, false, kCtx);
  if (!v.ok()) {
    return InvalidArgumentError(v.status().message() + " (or null for none)");
  }
  return std::optional<double>(*v);
}

// Keras' arguments that ringtrain does not implement are accepted only at their "off"
// values, which is what Keras' get_config writes for an optimizer that does not use them.
Status CheckUnsupported(const nlohmann::json& j) {
  const std::string ctx = kCtx;
  auto use_ema = j.find("use_ema");
  if (use_ema != j.end() && !(use_ema->is_boolean() && !use_ema->get<bool>()) && !use_ema->is_null()) {
    return InvalidArgumentError(ctx + ": 'use_ema' " + BriefDump(*use_ema) +
                                " is not supported (no weight averaging); remove it or set it to false");
  }
  auto ema = j.find("ema_momentum");
  if (ema != j.end() && !ema->is_null() && !ema->is_number()) {
    return InvalidArgumentError(ctx + ": 'ema_momentum' must be a number (it is unused: use_ema is off), got " +
                                BriefDump(*ema));
  }
  for (const char* key : {"ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps"}) {
    if (!IsNullOrAbsent(j, key)) {
      return InvalidArgumentError(ctx + ": '" + key + "' " + BriefDump(j.at(key)) +
                                  " is not supported; remove it or set it to null");
    }
  }
  auto jit = j.find("jit_compile");
  if (jit != j.end() && !jit->is_boolean() && !jit->is_null()) {
    return InvalidArgumentError(ctx + ": 'jit_compile' must be true or false (it has no effect here), got " +
                                BriefDump(*jit));
  }
  auto legacy = j.find("is_legacy_optimizer");
  if (legacy != j.end() && !(legacy->is_boolean() && !legacy->get<bool>())) {
    return InvalidArgumentError(ctx + ": 'is_legacy_optimizer' " + BriefDump(*legacy) +
                                " is not supported (the legacy tf.keras optimizers); remove it");
  }
  auto decay = j.find("decay");
  if (decay != j.end() && !decay->is_null() && !(decay->is_number() && decay->get<double>() == 0.0)) {
    return InvalidArgumentError(ctx + ": 'decay' (tf.keras 2's per-step learning-rate decay) is not supported; " +
                                "use the job's \"lr_schedule\": {\"type\": \"inverse_time_decay\", " +
                                "\"initial_learning_rate\": ..., \"decay_steps\": 1, \"decay_rate\": <decay>}");
  }
  auto name = j.find("name");
  if (name != j.end() && !name->is_string() && !name->is_null()) {
    return InvalidArgumentError(ctx + ": 'name' must be a string, got " + BriefDump(*name));
  }
  return Status::Ok();
}

StatusOr<OptimizerOptions> ParseOptions(const nlohmann::json& j, std::optional<double> default_weight_decay) {
  const std::string ctx = kCtx;
  RT_RETURN_IF_ERROR(CheckUnsupported(j));
  OptimizerOptions o;
  if (j.contains("weight_decay")) {
    RT_ASSIGN_OR_RETURN(o.weight_decay, GetOptionalNumber(j, "weight_decay", /*positive=*/false));
  } else {
    o.weight_decay = default_weight_decay;
  }
  struct Clip {
    const char* key;
    GradientClip::Mode mode;
  };
  std::string set;
  for (const Clip& c : {Clip{"clipnorm", GradientClip::Mode::kNorm},
                        Clip{"global_clipnorm", GradientClip::Mode::kGlobalNorm},
                        Clip{"clipvalue", GradientClip::Mode::kValue}}) {
    RT_ASSIGN_OR_RETURN(std::optional<double> v, GetOptionalNumber(j, c.key, /*positive=*/true));
    if (!v) continue;
    if (o.clip.active()) {
      return InvalidArgumentError(ctx + ": only one of 'clipnorm', 'clipvalue' and 'global_clipnorm' can be set " +
                                  "(as in Keras), got '" + set + "' and '" + c.key + "'");
    }
    o.clip.mode = c.mode;
    o.clip.value = *v;
    set = c.key;
  }
  return o;
}

StatusOr<std::unique_ptr<Optimizer>> Parse(const nlohmann::json& j) {
  const std::string ctx = kCtx;
  if (!j.is_object()) {
    return InvalidArgumentError(ctx + ": must be a JSON object such as {\"type\": \"adam\"}, got " + BriefDump(j));
  }
  auto t = j.find("type");
  if (t == j.end() || !t->is_string()) {
    return InvalidArgumentError(ctx + ": missing 'type' (" + kTypes + ")");
  }
  std::string type = t->get<std::string>();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  if (type == "sgd") {
    RT_RETURN_IF_ERROR(CheckFields(j, {"momentum", "nesterov"}));
    RT_ASSIGN_OR_RETURN(OptimizerOptions o, ParseOptions(j, std::nullopt));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.01, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double momentum, GetNumber(j, "momentum", 0.0, 0, false, 1, false, ctx));
    RT_ASSIGN_OR_RETURN(bool nesterov, GetBool(j, "nesterov", false, ctx));
    return std::unique_ptr<Optimizer>(new Sgd(lr, momentum, nesterov, o));
  }
  if (type == "adam" || type == "adamw") {
    const bool w = type == "adamw";
    RT_RETURN_IF_ERROR(CheckFields(j, {"beta_1", "beta_2", "epsilon", "amsgrad"}));
    if (w && j.contains("weight_decay") && j["weight_decay"].is_null()) {
      return InvalidArgumentError(ctx + ": AdamW's 'weight_decay' must be a number (default 0.004), got null");
    }
    RT_ASSIGN_OR_RETURN(OptimizerOptions o, ParseOptions(j, w ? std::optional<double>(0.004) : std::nullopt));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.001, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double b1, GetNumber(j, "beta_1", 0.9, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double b2, GetNumber(j, "beta_2", 0.999, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double eps, GetNumber(j, "epsilon", 1e-7, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(bool amsgrad, GetBool(j, "amsgrad", false, ctx));
    return std::unique_ptr<Optimizer>(new Adam(lr, b1, b2, eps, amsgrad, o, type));
  }
  if (type == "rmsprop") {
    RT_RETURN_IF_ERROR(CheckFields(j, {"rho", "momentum", "epsilon", "centered"}));
    RT_ASSIGN_OR_RETURN(OptimizerOptions o, ParseOptions(j, std::nullopt));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.001, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double rho, GetNumber(j, "rho", 0.9, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double momentum, GetNumber(j, "momentum", 0.0, 0, false, 1, false, ctx));
    RT_ASSIGN_OR_RETURN(double eps, GetNumber(j, "epsilon", 1e-7, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(bool centered, GetBool(j, "centered", false, ctx));
    return std::unique_ptr<Optimizer>(new Rmsprop(lr, rho, momentum, eps, centered, o));
  }
  if (type == "adagrad") {
    RT_RETURN_IF_ERROR(CheckFields(j, {"initial_accumulator_value", "epsilon"}));
    RT_ASSIGN_OR_RETURN(OptimizerOptions o, ParseOptions(j, std::nullopt));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.001, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double init, GetNumber(j, "initial_accumulator_value", 0.1, 0, false, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double eps, GetNumber(j, "epsilon", 1e-7, 0, true, kInf, false, ctx));
    return std::unique_ptr<Optimizer>(new Adagrad(lr, init, eps, o));
  }
  if (type == "nadam") {
    RT_RETURN_IF_ERROR(CheckFields(j, {"beta_1", "beta_2", "epsilon"}));
    RT_ASSIGN_OR_RETURN(OptimizerOptions o, ParseOptions(j, std::nullopt));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.001, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double b1, GetNumber(j, "beta_1", 0.9, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double b2, GetNumber(j, "beta_2", 0.999, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double eps, GetNumber(j, "epsilon", 1e-7, 0, true, kInf, false, ctx));
    return std::unique_ptr<Optimizer>(new Nadam(lr, b1, b2, eps, o));
  }
  return InvalidArgumentError(ctx + ": unknown 'type' " + BriefDump(*t) + " (supported: " + kTypes +
                              ", or Keras' class names SGD, Adam, AdamW, RMSprop, Adagrad, Nadam)");
}

}  // namespace

StatusOr<std::unique_ptr<Optimizer>> Optimizer::FromJson(const nlohmann::json& optimizer_json) {
  try {
    return Parse(optimizer_json);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("optimizer: malformed description: ") + e.what());
  }
}

}  // namespace ringtrain::nn
