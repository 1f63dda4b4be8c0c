// The pooling ops on the CPU, NHWC:
//   MaxPool2D: Forward keeps its input and output; Backward routes the gradient to the
//     cell that won each window (ties go to the first cell in row-major window order,
//     padding cells never win): kernels::MaxPool*.
//   AvgPool2D: each output is the mean of its window's cells that lie inside the input
//     ('same' padding counts no padding cell, as TensorFlow does); Backward spreads
//     dy / count over those cells.
//   GlobalAvgPool2D / GlobalMaxPool2D: [H, W, C] -> [C] (or [1, 1, C]). The mean sums the
//     pixels in row-major order, then divides by H * W; the max's gradient goes to the
//     first maximal pixel in row-major order, as MaxPool2D's does.
#include <algorithm>

#include "backends/cpu/cpu_kernel.h"
#include "kernels/kernels.h"

namespace ringtrain::backends::cpu {
namespace {

class MaxPool2DKernel final : public OneInputKernel {
 public:
  explicit MaxPool2DKernel(const ops::Node& node)
      : kg_(node.op.window), input_size_(InputSize(node)), output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    kernels::MaxPoolForward(kg_, in, batch, out);
    if (training) {
      x_ = in;
      batch_ = batch;
    }
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    kernels::MaxPoolBackward(kg_, x_, out_.data(), dout, batch_, din);
    return din;
  }

 private:
  const kernels::Window kg_;
  const int64_t input_size_, output_size_;
  const float* x_ = nullptr;  // the input of the last training Forward
  int batch_ = 0;
  std::vector<float> out_, din_;
};

// The input cells [h0, h1) x [w0, w1) of output (oh, ow): the window clipped to the input.
struct AvgPoolCells {
  int h0, h1, w0, w1;
  int count() const { return (h1 - h0) * (w1 - w0); }
};

AvgPoolCells AvgPoolCellsOf(const kernels::Window& g, int oh, int ow) {
  const int top = oh * g.stride_h - g.pad_top, left = ow * g.stride_w - g.pad_left;
  return {std::max(top, 0), std::min(top + g.kh, g.h), std::max(left, 0), std::min(left + g.kw, g.w)};
}

class AvgPool2DKernel final : public OneInputKernel {
 public:
  explicit AvgPool2DKernel(const ops::Node& node)
      : kg_(node.op.window), input_size_(InputSize(node)), output_size_(node.output_size()) {}

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    const kernels::Window& g = kg_;
    const int C = g.c;
    for (int n = 0; n < batch; ++n) {
      const float* img = in + static_cast<size_t>(n) * g.in_size();
      float* o = out + static_cast<size_t>(n) * output_size_;
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow, o += C) {
          const AvgPoolCells cells = AvgPoolCellsOf(g, oh, ow);
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

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    const kernels::Window& g = kg_;
    const int C = g.c;
    std::fill(din, din + static_cast<size_t>(batch_) * input_size_, 0.0f);
    for (int n = 0; n < batch_; ++n) {
      float* img = din + static_cast<size_t>(n) * g.in_size();
      const float* dy = dout + static_cast<size_t>(n) * output_size_;
      for (int oh = 0; oh < g.out_h; ++oh) {
        for (int ow = 0; ow < g.out_w; ++ow, dy += C) {
          const AvgPoolCells cells = AvgPoolCellsOf(g, oh, ow);
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

 private:
  const kernels::Window kg_;
  const int64_t input_size_, output_size_;
  int batch_ = 0;
  std::vector<float> out_, din_;
};

class GlobalPool2DKernel final : public OneInputKernel {
 public:
  explicit GlobalPool2DKernel(const ops::Node& node)
      : max_(node.op.kind == ops::OpKind::kGlobalMaxPool2D),
        pixels_(node.input_shapes[0][0] * node.input_shapes[0][1]),
        channels_(node.input_shapes[0][2]) {}

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
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

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
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

 private:
  const bool max_;
  const int pixels_, channels_;
  int batch_ = 0;
  std::vector<float> out_, din_;
  std::vector<int> argmax_;  // max: the winning pixel per (example, channel) of the last training Forward
};

}  // namespace

std::unique_ptr<CpuKernel> NewMaxPool2DKernel(const ops::Node& node) {
  return std::make_unique<MaxPool2DKernel>(node);
}
std::unique_ptr<CpuKernel> NewAvgPool2DKernel(const ops::Node& node) {
  return std::make_unique<AvgPool2DKernel>(node);
}
std::unique_ptr<CpuKernel> NewGlobalPool2DKernel(const ops::Node& node) {
  return std::make_unique<GlobalPool2DKernel>(node);
}

}  // namespace ringtrain::backends::cpu
