#include "nn/layers/up_sampling2d.h"

#include "nn/keras/json_fields.h"
#include "nn/layers/conv_args.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> UpSampling2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                      const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "size", "interpolation"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "up_sampling2d", ctx));
  RT_ASSIGN_OR_RETURN(auto size, GetIntPair(j, "size", {2, 2}, ctx));
  if (static_cast<int64_t>(in[0]) * size.first > (1 << 20) || static_cast<int64_t>(in[1]) * size.second > (1 << 20)) {
    return InvalidArgumentError(ctx + ": 'size' " + BriefDump(j.value("size", nlohmann::json(2))) + " makes the output larger than 2^20 a side");
  }
  ops::Op::Interpolation interpolation = ops::Op::Interpolation::kNearest;
  auto it = j.find("interpolation");
  if (it != j.end()) {
    if (*it == "bilinear") {
      interpolation = ops::Op::Interpolation::kBilinear;
    } else if (*it != "nearest") {
      return InvalidArgumentError(ctx + ": 'interpolation' " + BriefDump(*it) +
                                  " is not supported; UpSampling2D runs \"nearest\" (the default) and \"bilinear\"");
    }
  }
  return std::unique_ptr<Layer>(new UpSampling2D(std::move(name), in, size.first, size.second, interpolation));
}

UpSampling2D::UpSampling2D(std::string name, const Shape& in, int size_h, int size_w,
                           ops::Op::Interpolation interpolation)
    : Layer(std::move(name), in, Shape{in[0] * size_h, in[1] * size_w, in[2]}), interpolation_(interpolation) {}

ops::Op UpSampling2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kUpSampling2D;
  op.interpolation = interpolation_;
  return op;
}

}  // namespace ringtrain::nn
