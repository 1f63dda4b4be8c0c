#include "nn/max_pool2d.h"

#include <algorithm>
#include <limits>

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

const float* MaxPool2D::Forward(const float* in, int batch, bool training) {
  const int C = g_.channels, H = g_.h.in, W = g_.w.in;
  const size_t in_per = static_cast<size_t>(H) * W * C;
  const size_t out_per = static_cast<size_t>(output_size());
  float* out = EnsureSize(out_, batch * out_per);
  int32_t* arg = EnsureSize(argmax_, batch * out_per);
  for (int n = 0; n < batch; ++n) {
    const float* img = in + n * in_per;
    for (int oh = 0; oh < g_.h.out; ++oh) {
      // Clip the window to the input: 'same' padding cells are ignored, never zeros.
      const int h0 = std::max(oh * g_.h.stride - g_.h.pad_before, 0);
      const int h1 = std::min(oh * g_.h.stride - g_.h.pad_before + g_.h.k, H);
      for (int ow = 0; ow < g_.w.out; ++ow) {
        const int w0 = std::max(ow * g_.w.stride - g_.w.pad_before, 0);
        const int w1 = std::min(ow * g_.w.stride - g_.w.pad_before + g_.w.k, W);
        const size_t o = n * out_per + (static_cast<size_t>(oh) * g_.w.out + ow) * C;
        float* best = out + o;
        int32_t* best_at = arg + o;
        // The first cell seeds the maxima; later cells replace them only when strictly larger.
        const int32_t first = (h0 * W + w0) * C;
        for (int c = 0; c < C; ++c) {
          best[c] = img[first + c];
          best_at[c] = first + c;
        }
        for (int ih = h0; ih < h1; ++ih) {
          for (int iw = (ih == h0 ? w0 + 1 : w0); iw < w1; ++iw) {
            const int32_t cell = (ih * W + iw) * C;
            const float* v = img + cell;
            // Branch-free so the compiler can vectorise across channels.
            for (int c = 0; c < C; ++c) {
              const bool larger = v[c] > best[c];
              best_at[c] = larger ? cell + c : best_at[c];
              best[c] = larger ? v[c] : best[c];
            }
          }
        }
      }
    }
  }
  if (training) batch_ = batch;
  return out;
}

const float* MaxPool2D::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  const size_t in_per = static_cast<size_t>(input_size());
  const size_t out_per = static_cast<size_t>(output_size());
  float* din = EnsureSize(din_, batch_ * in_per);
  std::fill(din, din + batch_ * in_per, 0.0f);
  for (int n = 0; n < batch_; ++n) {
    float* d = din + n * in_per;
    const float* g = dout + n * out_per;
    const int32_t* arg = argmax_.data() + n * out_per;
    for (size_t o = 0; o < out_per; ++o) d[arg[o]] += g[o];
  }
  return din;
}

}  // namespace ringtrain::nn
