#include "nn/layers/avg_pool2d.h"

#include "nn/layers/conv_args.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> AvgPool2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                   const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "pool_size", "strides", "padding"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "average_pooling2d", ctx));
  RT_ASSIGN_OR_RETURN(auto pool, GetIntPair(j, "pool_size", {2, 2}, ctx));
  std::pair<int, int> strides = pool;
  if (auto it = j.find("strides"); it == j.end() || !it->is_null()) {  // Keras: null means pool_size
    RT_ASSIGN_OR_RETURN(strides, GetIntPair(j, "strides", pool, ctx));
  }
  RT_ASSIGN_OR_RETURN(Padding padding, GetPadding(j, ctx));
  Window2D g;
  g.channels = in[2];
  RT_ASSIGN_OR_RETURN(g.h, MakeWindow(in[0], pool.first, strides.first, padding, "pool size", "height", ctx));
  RT_ASSIGN_OR_RETURN(g.w, MakeWindow(in[1], pool.second, strides.second, padding, "pool size", "width", ctx));
  return std::unique_ptr<Layer>(new AvgPool2D(std::move(name), in, g));
}

AvgPool2D::AvgPool2D(std::string name, const Shape& in, const Window2D& g)
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, g.channels}), g_(g) {}

ops::Op AvgPool2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kAvgPool2D;
  op.window = ToOpWindow(g_);
  return op;
}

}  // namespace ringtrain::nn
