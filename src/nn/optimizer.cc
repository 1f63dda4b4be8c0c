#include "nn/optimizer.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "nn/adam.h"
#include "nn/json_fields.h"
#include "nn/sgd.h"

namespace ringtrain::nn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

StatusOr<std::unique_ptr<Optimizer>> Parse(const nlohmann::json& j) {
  const std::string ctx = "optimizer";
  if (!j.is_object()) {
    return InvalidArgumentError(ctx + ": must be a JSON object such as {\"type\": \"adam\"}, got " + BriefDump(j));
  }
  auto t = j.find("type");
  if (t == j.end() || !t->is_string()) {
    return InvalidArgumentError(ctx + ": missing 'type' (\"sgd\" or \"adam\")");
  }
  std::string type = t->get<std::string>();
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  if (type == "sgd") {
    RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "learning_rate", "momentum", "nesterov"}, ctx));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.01, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double momentum, GetNumber(j, "momentum", 0.0, 0, false, 1, false, ctx));
    RT_ASSIGN_OR_RETURN(bool nesterov, GetBool(j, "nesterov", false, ctx));
    return std::unique_ptr<Optimizer>(new Sgd(lr, momentum, nesterov));
  }
  if (type == "adam") {
    RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "learning_rate", "beta_1", "beta_2", "epsilon"}, ctx));
    RT_ASSIGN_OR_RETURN(double lr, GetNumber(j, "learning_rate", 0.001, 0, true, kInf, false, ctx));
    RT_ASSIGN_OR_RETURN(double b1, GetNumber(j, "beta_1", 0.9, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double b2, GetNumber(j, "beta_2", 0.999, 0, false, 1, true, ctx));
    RT_ASSIGN_OR_RETURN(double eps, GetNumber(j, "epsilon", 1e-7, 0, true, kInf, false, ctx));
    return std::unique_ptr<Optimizer>(new Adam(lr, b1, b2, eps));
  }
  return InvalidArgumentError(ctx + ": unknown 'type' " + BriefDump(*t) + " (supported: \"sgd\", \"adam\")");
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
