#include "nn/layers/max_pool2d.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> MaxPool2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "pool_size", "strides", "padding"}, ctx));
  if (in.size() != 3) {
    std::string hint;
    if (in.size() == 2) {
      hint = "; add {\"type\": \"reshape\", \"target_shape\": [" + std::to_string(in[0]) + ", " +
             std::to_string(in[1]) + ", 1]} before it";
    }
    return InvalidArgumentError(ctx + ": max_pooling2d needs a 3-D input per example (height, width, channels), got " +
                                ShapeToString(in) + hint);
  }
  RT_ASSIGN_OR_RETURN(auto pool, GetIntPair(j, "pool_size", {2, 2}, ctx));
  RT_ASSIGN_OR_RETURN(auto strides, GetIntPair(j, "strides", pool, ctx));
  RT_ASSIGN_OR_RETURN(Padding padding, GetPadding(j, ctx));
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], pool.first, strides.first, padding, "pool size", "height", ctx));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], pool.second, strides.second, padding, "pool size", "width", ctx));
  return std::unique_ptr<Layer>(new MaxPool2D(std::move(name), in, g));
}

MaxPool2D::MaxPool2D(std::string name, const Shape& in, const Window2D& g)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, g.channels}), g_(g) {}

ops::Op MaxPool2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kMaxPool2D;
  op.window = ToOpWindow(g_);
  return op;
}

}  // namespace ringtrain::nn
