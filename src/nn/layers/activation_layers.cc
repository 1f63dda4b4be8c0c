#include "nn/layers/activation_layers.h"

#include <limits>

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> ActivationLayer::CreateActivation(const nlohmann::json& j, std::string name,
                                                                   const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "activation"}, ctx));
  if (!j.contains("activation")) {
    return InvalidArgumentError(ctx + ": missing 'activation' (a Keras activation name, e.g. \"relu\")");
  }
  RT_ASSIGN_OR_RETURN(Activation act, GetActivation(j, ctx));
  return std::unique_ptr<Layer>(new ActivationLayer("activation", "Activation", std::move(name), in, act, false, {}));
}

StatusOr<std::unique_ptr<Layer>> ActivationLayer::CreateReLU(const nlohmann::json& j, std::string name,
                                                             const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "max_value", "negative_slope", "threshold"}, ctx));
  const double kInf = std::numeric_limits<double>::infinity();
  Relu r;
  if (auto m = j.find("max_value"); m != j.end() && !m->is_null()) {
    RT_ASSIGN_OR_RETURN(double v, GetNumber(j, "max_value", 0.0, 0.0, false, kInf, true, ctx));
    r.has_max = true;
    r.max_value = static_cast<float>(v);
  }
  RT_ASSIGN_OR_RETURN(double slope, GetNumber(j, "negative_slope", 0.0, 0.0, false, kInf, true, ctx));
  RT_ASSIGN_OR_RETURN(double threshold, GetNumber(j, "threshold", 0.0, 0.0, false, kInf, true, ctx));
  r.negative_slope = static_cast<float>(slope);
  r.threshold = static_cast<float>(threshold);
  return std::unique_ptr<Layer>(
      new ActivationLayer("re_lu", "ReLU", std::move(name), in, Activation::kRelu, true, r));
}

StatusOr<std::unique_ptr<Layer>> ActivationLayer::CreateLeakyReLU(const nlohmann::json& j, std::string name,
                                                                  const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "negative_slope", "alpha"}, ctx));
  if (j.contains("negative_slope") && j.contains("alpha")) {
    return InvalidArgumentError(ctx + ": give 'negative_slope' (Keras 3) or 'alpha' (tf.keras 2), not both");
  }
  const char* key = j.contains("alpha") ? "alpha" : "negative_slope";
  const double kInf = std::numeric_limits<double>::infinity();
  RT_ASSIGN_OR_RETURN(double slope, GetNumber(j, key, 0.3, 0.0, false, kInf, true, ctx));
  Relu r;
  r.negative_slope = static_cast<float>(slope);
  return std::unique_ptr<Layer>(
      new ActivationLayer("leaky_re_lu", "LeakyReLU", std::move(name), in, Activation::kLeakyRelu, true, r));
}

StatusOr<std::unique_ptr<Layer>> ActivationLayer::CreateSoftmax(const nlohmann::json& j, std::string name,
                                                                const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "axis"}, ctx));
  if (auto a = j.find("axis"); a != j.end()) {
    // -1, or the last axis counted with the batch (Keras' axis numbering).
    const bool last = a->is_number_integer() &&
                      (a->get<int64_t>() == -1 || a->get<int64_t>() == static_cast<int64_t>(in.size()));
    if (!last) {
      return InvalidArgumentError(ctx + ": 'axis' " + BriefDump(*a) +
                                  " is not supported; Softmax runs over the last axis only (axis -1)");
    }
  }
  return std::unique_ptr<Layer>(
      new ActivationLayer("softmax", "Softmax", std::move(name), in, Activation::kSoftmax, false, {}));
}

ActivationLayer::ActivationLayer(const char* type, const char* class_name, std::string name, const Shape& in,
                                 Activation act, bool generic_relu, Relu relu)
    : Layer(std::move(name), in, in),
      type_(type),
      class_name_(class_name),
      act_(act),
      generic_relu_(generic_relu),
      relu_(relu) {}

ops::Op ActivationLayer::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kActivation;
  op.activation = act_;
  op.relu.generic = generic_relu_;
  op.relu.has_max = relu_.has_max;
  op.relu.max_value = relu_.max_value;
  op.relu.negative_slope = relu_.negative_slope;
  op.relu.threshold = relu_.threshold;
  if (generic_relu_) {
    op.detail = std::string(class_name_) + (relu_.has_max ? " max_value " + std::to_string(relu_.max_value) : "") +
                (relu_.negative_slope != 0.0f ? " negative_slope " + std::to_string(relu_.negative_slope) : "") +
                (relu_.threshold != 0.0f ? " threshold " + std::to_string(relu_.threshold) : "");
  }
  return op;
}

}  // namespace ringtrain::nn
