#include "nn/layers/global_pool2d.h"

#include "nn/layers/conv_args.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> GlobalPool2D::CreateAverage(const nlohmann::json& j, std::string name,
                                                             const Shape& in, const std::string& ctx) {
  return Create(j, std::move(name), in, ctx, /*max=*/false);
}

StatusOr<std::unique_ptr<Layer>> GlobalPool2D::CreateMax(const nlohmann::json& j, std::string name, const Shape& in,
                                                         const std::string& ctx) {
  return Create(j, std::move(name), in, ctx, /*max=*/true);
}

StatusOr<std::unique_ptr<Layer>> GlobalPool2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                      const std::string& ctx, bool max) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "keepdims"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, max ? "global_max_pooling2d" : "global_average_pooling2d", ctx));
  RT_ASSIGN_OR_RETURN(bool keepdims, GetBool(j, "keepdims", false, ctx));
  return std::unique_ptr<Layer>(new GlobalPool2D(std::move(name), in, keepdims, max));
}

GlobalPool2D::GlobalPool2D(std::string name, const Shape& in, bool keepdims, bool max)
    : Layer(std::move(name), in, keepdims ? Shape{1, 1, in[2]} : Shape{in[2]}), max_(max) {}

ops::Op GlobalPool2D::op() const {
  ops::Op op;
  op.kind = max_ ? ops::OpKind::kGlobalMaxPool2D : ops::OpKind::kGlobalAvgPool2D;
  return op;
}

}  // namespace ringtrain::nn
