#include "nn/layers/cropping2d.h"

#include <array>

#include "nn/keras/json_fields.h"
#include "nn/layers/conv_args.h"

namespace ringtrain::nn {
namespace {

constexpr int64_t kMaxCrop = 1 << 16;

bool AsCrop(const nlohmann::json& v, int* out) {
  if (!v.is_number_integer()) return false;
  const int64_t x = v.get<int64_t>();
  if (x < 0 || x > kMaxCrop) return false;
  *out = static_cast<int>(x);
  return true;
}

// {top, bottom, left, right}.
StatusOr<std::array<int, 4>> GetCropping4(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("cropping");
  if (it == j.end()) return std::array<int, 4>{0, 0, 0, 0};
  const nlohmann::json& v = *it;
  std::array<int, 4> p{};
  if (AsCrop(v, &p[0])) return std::array<int, 4>{p[0], p[0], p[0], p[0]};
  if (v.is_array() && v.size() == 2) {
    if (AsCrop(v[0], &p[0]) && AsCrop(v[1], &p[2])) return std::array<int, 4>{p[0], p[0], p[2], p[2]};
    if (v[0].is_array() && v[0].size() == 2 && v[1].is_array() && v[1].size() == 2 && AsCrop(v[0][0], &p[0]) &&
        AsCrop(v[0][1], &p[1]) && AsCrop(v[1][0], &p[2]) && AsCrop(v[1][1], &p[3])) {
      return p;
    }
  }
  return InvalidArgumentError(ctx + ": 'cropping' must be a non-negative integer, a pair [height, width] or "
                                    "[[top, bottom], [left, right]] (each at most 65536), got " +
                              BriefDump(v));
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> Cropping2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                    const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "cropping"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "cropping2d", ctx));
  RT_ASSIGN_OR_RETURN(auto p, GetCropping4(j, ctx));
  if (p[0] + p[1] >= in[0] || p[2] + p[3] >= in[1]) {
    return InvalidArgumentError(ctx + ": 'cropping' " + BriefDump(j.value("cropping", nlohmann::json(0))) +
                                " removes every row or column of the " + std::to_string(in[0]) + "x" +
                                std::to_string(in[1]) + " input; crop less than the input's height and width");
  }
  return std::unique_ptr<Layer>(new Cropping2D(std::move(name), in, p[0], p[1], p[2], p[3]));
}

Cropping2D::Cropping2D(std::string name, const Shape& in, int top, int bottom, int left, int right)
    : Layer(std::move(name), in, Shape{in[0] - top - bottom, in[1] - left - right, in[2]}), top_(top), left_(left) {}

ops::Op Cropping2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kCropping2D;
  op.window.pad_top = top_;
  op.window.pad_left = left_;
  return op;
}

}  // namespace ringtrain::nn
