#include "nn/layers/image_resizing.h"

#include <algorithm>
#include <cstdint>

#include "nn/keras/json_fields.h"
#include "nn/layers/conv_args.h"

namespace ringtrain::nn {
namespace {

constexpr int kMaxSide = 1 << 16;

StatusOr<ops::Op::Interpolation> GetResizeInterpolation(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("interpolation");
  if (it == j.end() || *it == "bilinear") return ops::Op::Interpolation::kBilinear;
  if (*it == "nearest") return ops::Op::Interpolation::kNearest;
  return InvalidArgumentError(ctx + ": 'interpolation' " + BriefDump(*it) +
                              " is not supported; Resizing runs \"bilinear\" (the default) and \"nearest\"");
}

}  // namespace

ResizeBox AspectRatioBox(int h, int w, int target_h, int target_w) {
  // TensorFlow: tf.cast(tf.cast(width * target_height, "float32") / target_width, "int32").
  const float fh = static_cast<float>(static_cast<int64_t>(w) * target_h) / static_cast<float>(target_w);
  const float fw = static_cast<float>(static_cast<int64_t>(h) * target_w) / static_cast<float>(target_h);
  ResizeBox b;
  b.height = std::max(std::min(h, static_cast<int>(fh)), 1);
  b.width = std::max(std::min(w, static_cast<int>(fw)), 1);
  b.top = static_cast<int>(static_cast<float>(h - b.height) / 2.0f);
  b.left = static_cast<int>(static_cast<float>(w - b.width) / 2.0f);
  return b;
}

StatusOr<std::unique_ptr<Layer>> ImageResizing::CreateResizing(const nlohmann::json& j, std::string name,
                                                               const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j,
                                      {"type", "name", "height", "width", "interpolation", "crop_to_aspect_ratio",
                                       "pad_to_aspect_ratio", "fill_mode", "fill_value", "antialias"},
                                      ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "resizing", ctx));
  RT_ASSIGN_OR_RETURN(int height, GetPositiveInt(j, "height", 0, ctx, kMaxSide));
  RT_ASSIGN_OR_RETURN(int width, GetPositiveInt(j, "width", 0, ctx, kMaxSide));
  RT_ASSIGN_OR_RETURN(ops::Op::Interpolation interpolation, GetResizeInterpolation(j, ctx));
  RT_ASSIGN_OR_RETURN(bool crop, GetBool(j, "crop_to_aspect_ratio", false, ctx));
  RT_ASSIGN_OR_RETURN(bool pad, GetBool(j, "pad_to_aspect_ratio", false, ctx));
  RT_ASSIGN_OR_RETURN(bool antialias, GetBool(j, "antialias", false, ctx));
  if (pad) {
    return InvalidArgumentError(ctx + ": 'pad_to_aspect_ratio' true is not implemented; use false (the default) or "
                                      "crop_to_aspect_ratio");
  }
  if (antialias) return InvalidArgumentError(ctx + ": 'antialias' true is not implemented; use false (the default)");
  auto fm = j.find("fill_mode");
  if (fm != j.end() && !(fm->is_string() && (*fm == "constant" || *fm == "reflect" || *fm == "wrap" ||
                                             *fm == "nearest"))) {
    return InvalidArgumentError(ctx + ": 'fill_mode' must be \"constant\" (the default), \"reflect\", \"wrap\" or "
                                      "\"nearest\", got " + BriefDump(*fm));
  }
  RT_RETURN_IF_ERROR(GetNumber(j, "fill_value", 0.0, -1e30, false, 1e30, false, ctx).status());
  ResizeBox box{0, 0, in[0], in[1]};
  if (crop) box = AspectRatioBox(in[0], in[1], height, width);
  return std::unique_ptr<Layer>(
      new ImageResizing(std::move(name), in, height, width, /*center_crop=*/false, box, interpolation));
}

StatusOr<std::unique_ptr<Layer>> ImageResizing::CreateCenterCrop(const nlohmann::json& j, std::string name,
                                                                 const Shape& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "height", "width"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "center_crop", ctx));
  RT_ASSIGN_OR_RETURN(int height, GetPositiveInt(j, "height", 0, ctx, kMaxSide));
  RT_ASSIGN_OR_RETURN(int width, GetPositiveInt(j, "width", 0, ctx, kMaxSide));
  ResizeBox box;
  if (in[0] >= height && in[1] >= width) {
    box = {(in[0] - height) / 2, (in[1] - width) / 2, height, width};
  } else {
    box = AspectRatioBox(in[0], in[1], height, width);  // Keras' smart_resize
  }
  return std::unique_ptr<Layer>(new ImageResizing(std::move(name), in, height, width, /*center_crop=*/true, box,
                                                  ops::Op::Interpolation::kBilinear));
}

ImageResizing::ImageResizing(std::string name, const Shape& in, int height, int width, bool center_crop,
                             const ResizeBox& box, ops::Op::Interpolation interpolation)
    : Layer(std::move(name), in, Shape{height, width, in[2]}),
      center_crop_(center_crop),
      box_(box),
      interpolation_(interpolation) {}

ops::Op ImageResizing::op() const {
  ops::Op op;
  op.kind = center_crop_ ? ops::OpKind::kCenterCrop : ops::OpKind::kResizing;
  op.window.pad_top = box_.top;
  op.window.pad_left = box_.left;
  op.crop_height = box_.height;
  op.crop_width = box_.width;
  op.interpolation = interpolation_;
  return op;
}

}  // namespace ringtrain::nn
