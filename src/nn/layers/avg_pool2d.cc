#include "nn/layers/avg_pool2d.h"

#include <algorithm>

#include "nn/layers/conv_args.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

// The input cells [h0, h1) x [w0, w1) of output (oh, ow): the window clipped to the input.
struct Cells {
  int h0, h1, w0, w1;
  int count() const { return (h1 - h0) * (w1 - w0); }
};

Cells CellsOf(const kernels::Window& g, int oh, int ow) {
  const int top = oh * g.stride_h - g.pad_top, left = ow * g.stride_w - g.pad_left;
  return {std::max(top, 0), std::min(top + g.kh, g.h), std::max(left, 0), std::min(left + g.kw, g.w)};
}

}  // namespace

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
    : Layer(std::move(name), in, Shape{g.h.out, g.w.out, g.channels}), g_(g), kg_(ToKernelWindow(g)) {}

ops::Op AvgPool2D::op() const {
  ops::Op op;
  op.kind = ops::OpKind::kAvgPool2D;
  op.window = kg_;
  return op;
}

const float* AvgPool2D::Forward(const float* in, int batch, bool training) {
  float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size());
  const kernels::Window& g = kg_;
  const int C = g.c;
  for (int n = 0; n < batch; ++n) {
    const float* img = in + static_cast<size_t>(n) * g.in_size();
    float* o = out + static_cast<size_t>(n) * output_size();
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow, o += C) {
        const Cells cells = CellsOf(g, oh, ow);
        std::fill(o, o + C, 0.0f);
        for (int ih = cells.h0; ih < cells.h1; ++ih) {
          for (int iw = cells.w0; iw < cells.w1; ++iw) {
            const float* __restrict v = img + (static_cast<size_t>(ih) * g.w + iw) * C;
            float* __restrict acc = o;
            for (int c = 0; c < C; ++c) acc[c] += v[c];
          }
        }
        const float count = static_cast<float>(cells.count());
        for (int c = 0; c < C; ++c) o[c] /= count;
      }
    }
  }
  if (training) batch_ = batch;
  return out;
}

const float* AvgPool2D::Backward(const float* dout, bool need_din) {
  if (!need_din) return nullptr;
  float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size());
  const kernels::Window& g = kg_;
  const int C = g.c;
  std::fill(din, din + static_cast<size_t>(batch_) * input_size(), 0.0f);
  for (int n = 0; n < batch_; ++n) {
    float* img = din + static_cast<size_t>(n) * g.in_size();
    const float* dy = dout + static_cast<size_t>(n) * output_size();
    for (int oh = 0; oh < g.out_h; ++oh) {
      for (int ow = 0; ow < g.out_w; ++ow, dy += C) {
        const Cells cells = CellsOf(g, oh, ow);
        const float count = static_cast<float>(cells.count());
        for (int ih = cells.h0; ih < cells.h1; ++ih) {
          for (int iw = cells.w0; iw < cells.w1; ++iw) {
            float* __restrict d = img + (static_cast<size_t>(ih) * g.w + iw) * C;
            const float* __restrict s = dy;
            for (int c = 0; c < C; ++c) d[c] += s[c] / count;
          }
        }
      }
    }
  }
  return din;
}

}  // namespace ringtrain::nn
