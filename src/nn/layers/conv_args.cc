#include "nn/layers/conv_args.h"

#include <algorithm>
#include <cctype>

#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

// "GlorotUniform", "glorot_uniform" and "glorotUniform" all name the same initializer.
std::string Canonical(std::string s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

Status CheckImageInput(const Shape& in, const char* type, const std::string& ctx) {
  if (in.size() == 3) return Status::Ok();
  std::string hint;
  if (in.size() == 2) {
    hint = "; add {\"type\": \"reshape\", \"target_shape\": [" + std::to_string(in[0]) + ", " + std::to_string(in[1]) +
           ", 1]} before it";
  }
  return InvalidArgumentError(ctx + ": " + type + " needs a 3-D input per example (height, width, channels), got " +
                              ShapeToString(in) + hint);
}

StatusOr<std::pair<int, int>> GetDilation(const nlohmann::json& j, std::pair<int, int> strides,
                                          const std::string& ctx) {
  RT_ASSIGN_OR_RETURN(auto dilation, GetIntPair(j, "dilation_rate", {1, 1}, ctx));
  if ((dilation.first > 1 || dilation.second > 1) && (strides.first > 1 || strides.second > 1)) {
    return InvalidArgumentError(ctx + ": 'dilation_rate' [" + std::to_string(dilation.first) + ", " +
                                std::to_string(dilation.second) + "] with 'strides' [" + std::to_string(strides.first) +
                                ", " + std::to_string(strides.second) +
                                "]: Keras does not allow strides > 1 together with dilation_rate > 1; set one of "
                                "them to 1");
  }
  return dilation;
}

Status CheckDefaultKernelInitializer(const nlohmann::json& j, const char* key, const char* keras_default,
                               const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  const std::string want = Canonical(keras_default);
  bool ok = false;
  if (it->is_string()) {
    ok = Canonical(it->get<std::string>()) == want;
  } else if (it->is_object() && it->contains("class_name") && (*it)["class_name"].is_string()) {
    ok = Canonical((*it)["class_name"].get<std::string>()) == want;
    // tfjs writes glorot_uniform as the VarianceScaling it is.
    if (!ok && want == "glorotuniform" && (*it)["class_name"] == "VarianceScaling" && it->contains("config") &&
        (*it)["config"].is_object()) {
      const auto& config = (*it)["config"];
      const auto scale = config.find("scale");
      ok = scale != config.end() && scale->is_number() && scale->get<double>() == 1.0 &&
           config.value("mode", nlohmann::json()) == "fan_avg" &&
           config.value("distribution", nlohmann::json()) == "uniform";
      for (auto& [k, unused] : config.items()) ok = ok && (k == "scale" || k == "mode" || k == "distribution" || k == "seed");
      if (ok) return Status::Ok();
    }
    // Only a seed may configure the default (ringtrain seeds from the job's seed).
    if (ok && it->contains("config") && !(*it)["config"].is_null()) {
      const auto& config = (*it)["config"];
      ok = config.is_object();
      for (auto& [k, unused] : config.items()) ok = ok && k == "seed";
    }
  }
  if (ok) return Status::Ok();
  return InvalidArgumentError(ctx + ": '" + key + "' " + BriefDump(*it) + " is not supported for this layer; only " +
                              "Keras' default \"" + keras_default + "\" is: remove it");
}

Status CheckNoRegularizer(const nlohmann::json& j, const char* key, const std::string& ctx) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  return InvalidArgumentError(ctx + ": '" + key + "' " + BriefDump(*it) +
                              " is not supported for this layer (no regularizer): remove it");
}

StatusOr<DepthwiseArgs> GetDepthwiseArgs(const nlohmann::json& j, const char* class_name, const std::string& ctx) {
  DepthwiseArgs a;
  RT_ASSIGN_OR_RETURN(a.kernel, GetIntPair(j, "kernel_size", {0, 0}, ctx));
  RT_ASSIGN_OR_RETURN(a.strides, GetIntPair(j, "strides", {1, 1}, ctx));
  RT_ASSIGN_OR_RETURN(a.padding, GetPadding(j, ctx));
  RT_ASSIGN_OR_RETURN(a.dilation, GetDilation(j, a.strides, ctx));
  RT_ASSIGN_OR_RETURN(a.multiplier, GetPositiveInt(j, "depth_multiplier", 1, ctx, 1 << 16));
  RT_ASSIGN_OR_RETURN(int groups, GetPositiveInt(j, "groups", 1, ctx));
  if (groups != 1) {
    return InvalidArgumentError(ctx + ": 'groups' is " + std::to_string(groups) + "; " + class_name +
                                " has no groups (it must be 1)");
  }
  RT_ASSIGN_OR_RETURN(a.act, GetActivation(j, ctx));
  RT_ASSIGN_OR_RETURN(a.use_bias, GetBool(j, "use_bias", true, ctx));
  return a;
}

StatusOr<Window2D> DepthwiseWindow(const Shape& in, const DepthwiseArgs& a, const char* what, const std::string& ctx) {
  if (static_cast<int64_t>(in[2]) * a.multiplier > (1 << 24)) {
    return InvalidArgumentError(ctx + ": 'depth_multiplier' " + std::to_string(a.multiplier) + " times " +
                                std::to_string(in[2]) + " input channels is too many " + what + " channels");
  }
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], a.kernel.first, a.strides.first, a.padding, "kernel", "height", ctx,
                                      a.dilation.first));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], a.kernel.second, a.strides.second, a.padding, "kernel", "width", ctx,
                                      a.dilation.second));
  return g;
}

}  // namespace ringtrain::nn
