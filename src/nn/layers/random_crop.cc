#include "nn/layers/random_crop.h"

#include "nn/layers/augment_common.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {

StatusOr<std::unique_ptr<Layer>> RandomCrop::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "height", "width", "seed"}, ctx));
  RT_RETURN_IF_ERROR(augment::CheckImageInput(in, "RandomCrop", ctx));
  RT_ASSIGN_OR_RETURN(int height, GetPositiveInt(j, "height", 0, ctx, 1 << 16));
  RT_ASSIGN_OR_RETURN(int width, GetPositiveInt(j, "width", 0, ctx, 1 << 16));
  RT_ASSIGN_OR_RETURN(uint64_t key, augment::LayerKey(j, name, ctx));
  return std::unique_ptr<Layer>(new RandomCrop(std::move(name), in, height, width, key));
}

RandomCrop::RandomCrop(std::string name, const Shape& in, int height, int width, uint64_t key)
    : Layer(std::move(name), in, Shape{height, width, in[2]}), height_(height), width_(width), key_(key) {}

ops::Op RandomCrop::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kRandomCrop;
  op.key = key_;
  op.crop_height = height_;
  op.crop_width = width_;
  return op;
}

}  // namespace ringtrain::nn
