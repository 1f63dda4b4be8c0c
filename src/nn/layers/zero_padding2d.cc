#include "nn/layers/zero_padding2d.h"

#include <array>

#include "nn/layers/conv_args.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

constexpr int64_t kMaxPad = 1 << 16;

bool AsPad(const nlohmann::json& v, int* out) {
  if (!v.is_number_integer()) return false;
  const int64_t x = v.get<int64_t>();
  if (x < 0 || x > kMaxPad) return false;
  *out = static_cast<int>(x);
  return true;
}

// {top, bottom, left, right}.
StatusOr<std::array<int, 4>> GetPadding4(const nlohmann::json& j, const std::string& ctx) {
  auto it = j.find("padding");
  if (it == j.end()) return std::array<int, 4>{1, 1, 1, 1};
  const nlohmann::json& v = *it;
  std::array<int, 4> p{};
  if (AsPad(v, &p[0])) return std::array<int, 4>{p[0], p[0], p[0], p[0]};
  if (v.is_array() && v.size() == 2) {
    if (AsPad(v[0], &p[0]) && AsPad(v[1], &p[2])) return std::array<int, 4>{p[0], p[0], p[2], p[2]};
    if (v[0].is_array() && v[0].size() == 2 && v[1].is_array() && v[1].size() == 2 && AsPad(v[0][0], &p[0]) &&
        AsPad(v[0][1], &p[1]) && AsPad(v[1][0], &p[2]) && AsPad(v[1][1], &p[3])) {
      return p;
    }
  }
  return InvalidArgumentError(ctx + ": 'padding' must be a non-negative integer, a pair [height, width] or "
                                    "[[top, bottom], [left, right]] (each at most 65536), got " +
                              BriefDump(v));
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> ZeroPadding2D::Create(const nlohmann::json& j, std::string name, const Shape& in,
                                                       const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "padding"}, ctx));
  RT_RETURN_IF_ERROR(CheckImageInput(in, "zero_padding2d", ctx));
  RT_ASSIGN_OR_RETURN(auto p, GetPadding4(j, ctx));
  return std::unique_ptr<Layer>(new ZeroPadding2D(std::move(name), in, p[0], p[1], p[2], p[3]));
}

ZeroPadding2D::ZeroPadding2D(std::string name, const Shape& in, int top, int bottom, int left, int right)
    : Layer(std::move(name), in, Shape{in[0] + top + bottom, in[1] + left + right, in[2]}), top_(top), left_(left) {}

ops::Op ZeroPadding2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kZeroPadding2D;
  op.window.pad_top = top_;
  op.window.pad_left = left_;
  return op;
}

}  // namespace ringtrain::nn
