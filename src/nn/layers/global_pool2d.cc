#include "nn/layers/global_pool2d.h"

#include <algorithm>

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
    : Layer(std::move(name), in, keepdims ? Shape{1, 1, in[2]} : Shape{in[2]}),
      max_(max),
      pixels_(in[0] * in[1]),
      channels_(in[2]) {}

ops::Op GlobalPool2D::op() const {
  ops::Op op;
  op.kind = max_ ? ops::OpKind::kGlobalMaxPool2D : ops::OpKind::kGlobalAvgPool2D;
  return op;
}

const float* GlobalPool2D::Forward(const float* in, int batch, bool training) {
  const size_t C = static_cast<size_t>(channels_);
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * C);
  int* arg = max_ && training ? EnsureSize(argmax_, static_cast<size_t>(batch) * C) : nullptr;
  for (int n = 0; n < batch; ++n) {
    const float* img = in + static_cast<size_t>(n) * pixels_ * C;
    float* __restrict o = out + static_cast<size_t>(n) * C;
    std::copy(img, img + C, o);
    if (arg != nullptr) std::fill(arg + n * C, arg + (n + 1) * C, 0);
    for (int p = 1; p < pixels_; ++p) {
      const float* __restrict v = img + static_cast<size_t>(p) * C;
      if (!max_) {
        for (size_t c = 0; c < C; ++c) o[c] += v[c];
      } else if (arg == nullptr) {
        for (size_t c = 0; c < C; ++c) o[c] = v[c] > o[c] ? v[c] : o[c];
      } else {
        int* __restrict a = arg + n * C;
        for (size_t c = 0; c < C; ++c) {  // strictly greater: ties keep the first pixel
          const bool more = v[c] > o[c];
          o[c] = more ? v[c] : o[c];
          a[c] = more ? p : a[c];
        }
      }
    }
    if (!max_) {
      const float count = static_cast<float>(pixels_);
      for (size_t c = 0; c < C; ++c) o[c] /= count;
    }
  }
  if (training) batch_ = batch;
  return out;
}

const float* GlobalPool2D::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  const size_t C = static_cast<size_t>(channels_);
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * pixels_ * C);
  for (int n = 0; n < batch_; ++n) {
    float* img = din + static_cast<size_t>(n) * pixels_ * C;
    const float* __restrict dy = dout + static_cast<size_t>(n) * C;
    if (max_) {
      std::fill(img, img + static_cast<size_t>(pixels_) * C, 0.0f);
      const int* a = argmax_.data() + n * C;
      for (size_t c = 0; c < C; ++c) img[static_cast<size_t>(a[c]) * C + c] = dy[c];
    } else {
      const float count = static_cast<float>(pixels_);
      for (int p = 0; p < pixels_; ++p) {
        float* __restrict d = img + static_cast<size_t>(p) * C;
        for (size_t c = 0; c < C; ++c) d[c] = dy[c] / count;
      }
    }
  }
  return din;
}

}  // namespace ringtrain::nn
