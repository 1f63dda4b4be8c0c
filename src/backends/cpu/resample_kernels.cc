// The ops that sample an image's box onto another grid, on the CPU:
//   Cropping2D    the box at (window.pad_top, pad_left) of the output's size, copied
//   UpSampling2D  the whole input, resized to the output (nearest or bilinear)
//   Resizing, CenterCrop
//                 the box (window.pad_top, pad_left, crop_height x crop_width) resized to
//                 the output (interpolation)
// Resizing is TensorFlow's tf.image.resize without antialiasing: half-pixel centres,
// nearest source floor((o + 0.5) * scale) (at most the last cell), bilinear source
// (o + 0.5) * scale - 0.5 between floor and ceil (clamped to the box) with
// top + (bottom - top) * y_lerp over left + (right - left) * x_lerp, scale = box / out in
// float. A box of the output's size is copied (the resize's identity).
// Backward sums dy into dx in row-major output order, each output's taps in TensorFlow's
// order (top-left, top-right, bottom-left, bottom-right): the same bits every run.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_kernel.h"

namespace ringtrain::backends::cpu {
namespace {

enum class Mode { kCopy, kNearest, kBilinear };

struct Geometry {
  int in_h, in_w, c;
  int top, left, box_h, box_w;  // the box of the input that is sampled
  int out_h, out_w;
  Mode mode;
};

Geometry GeometryOf(const ops::Node& node) {
  const ops::Shape& in = node.input_shapes[0];
  const ops::Shape& out = node.output_shape;
  const ops::Op& op = node.op;
  Geometry g{in[0], in[1], in[2], 0, 0, in[0], in[1], out[0], out[1], Mode::kCopy};
  switch (op.kind) {
    case ops::OpKind::kCropping2D:
      g.top = op.window.pad_top;
      g.left = op.window.pad_left;
      g.box_h = out[0];
      g.box_w = out[1];
      break;
    case ops::OpKind::kResizing:
    case ops::OpKind::kCenterCrop:
      g.top = op.window.pad_top;
      g.left = op.window.pad_left;
      g.box_h = op.crop_height;
      g.box_w = op.crop_width;
      break;
    default:  // kUpSampling2D: the whole input
      break;
  }
  if (g.box_h != g.out_h || g.box_w != g.out_w) {
    g.mode = op.interpolation == ops::Op::Interpolation::kNearest ? Mode::kNearest : Mode::kBilinear;
  }
  return g;
}

// One output index's source cells along an axis (relative to the box) and the weight of
// the upper one.
struct Tap {
  int lower, upper;
  float lerp;
};

Tap TapOf(Mode mode, int o, int box, int out) {
  const float scale = static_cast<float>(box) / static_cast<float>(out);
  Tap t{o, o, 0.0f};
  if (mode == Mode::kNearest) {
    const int s = std::min(static_cast<int>(std::floor((static_cast<float>(o) + 0.5f) * scale)), box - 1);
    t.lower = t.upper = std::max(s, 0);
  } else if (mode == Mode::kBilinear) {
    const float in = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    const float in_f = std::floor(in);
    t.lower = std::max(static_cast<int>(in_f), 0);
    t.upper = std::min(static_cast<int>(std::ceil(in)), box - 1);
    t.lerp = in - in_f;
  }
  return t;
}

class ResampleKernel final : public OneInputKernel {
 public:
  explicit ResampleKernel(const ops::Node& node)
      : g_(GeometryOf(node)), input_size_(InputSize(node)), output_size_(node.output_size()) {
    for (int o = 0; o < g_.out_h; ++o) ys_.push_back(TapOf(g_.mode, o, g_.box_h, g_.out_h));
    for (int o = 0; o < g_.out_w; ++o) xs_.push_back(TapOf(g_.mode, o, g_.box_w, g_.out_w));
  }

 protected:
  const float* ForwardOne(const KernelArgs&, const float* in, int batch, bool training) override {
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * output_size_);
    const size_t c = g_.c;
    for (int n = 0; n < batch; ++n) {
      const float* x = in + static_cast<size_t>(n) * input_size_;
      float* y = out + static_cast<size_t>(n) * output_size_;
      for (int oy = 0; oy < g_.out_h; ++oy) {
        const Tap& ty = ys_[oy];
        for (int ox = 0; ox < g_.out_w; ++ox) {
          const Tap& tx = xs_[ox];
          float* yo = y + (static_cast<size_t>(oy) * g_.out_w + ox) * c;
          const float* tl = Cell(x, ty.lower, tx.lower);
          if (g_.mode != Mode::kBilinear) {
            std::memcpy(yo, tl, c * sizeof(float));
            continue;
          }
          const float* tr = Cell(x, ty.lower, tx.upper);
          const float* bl = Cell(x, ty.upper, tx.lower);
          const float* br = Cell(x, ty.upper, tx.upper);
          for (size_t k = 0; k < c; ++k) {
            const float top = tl[k] + (tr[k] - tl[k]) * tx.lerp;
            const float bottom = bl[k] + (br[k] - bl[k]) * tx.lerp;
            yo[k] = top + (bottom - top) * ty.lerp;
          }
        }
      }
    }
    if (training) batch_ = batch;
    return out;
  }

  const float* BackwardOne(const KernelArgs&, const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    std::fill(din, din + static_cast<size_t>(batch_) * input_size_, 0.0f);
    const size_t c = g_.c;
    for (int n = 0; n < batch_; ++n) {
      float* dx = din + static_cast<size_t>(n) * input_size_;
      const float* dy = dout + static_cast<size_t>(n) * output_size_;
      for (int oy = 0; oy < g_.out_h; ++oy) {
        const Tap& ty = ys_[oy];
        for (int ox = 0; ox < g_.out_w; ++ox) {
          const Tap& tx = xs_[ox];
          const float* d = dy + (static_cast<size_t>(oy) * g_.out_w + ox) * c;
          float* tl = Cell(dx, ty.lower, tx.lower);
          if (g_.mode != Mode::kBilinear) {
            for (size_t k = 0; k < c; ++k) tl[k] += d[k];
            continue;
          }
          float* tr = Cell(dx, ty.lower, tx.upper);
          float* bl = Cell(dx, ty.upper, tx.lower);
          float* br = Cell(dx, ty.upper, tx.upper);
          for (size_t k = 0; k < c; ++k) {
            const float dtop = (1.0f - ty.lerp) * d[k];
            tl[k] += dtop * (1.0f - tx.lerp);
            tr[k] += dtop * tx.lerp;
            const float dbottom = ty.lerp * d[k];
            bl[k] += dbottom * (1.0f - tx.lerp);
            br[k] += dbottom * tx.lerp;
          }
        }
      }
    }
    return din;
  }

 private:
  // The first channel of box cell (by, bx) in one example's input (or its gradient).
  template <typename T>
  T* Cell(T* x, int by, int bx) const {
    return x + ((static_cast<size_t>(g_.top) + by) * g_.in_w + g_.left + bx) * g_.c;
  }

  const Geometry g_;
  const int64_t input_size_, output_size_;
  std::vector<Tap> ys_, xs_;  // per output row and column
  int batch_ = 0;
  std::vector<float> out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewResampleKernel(const ops::Node& node) { return std::make_unique<ResampleKernel>(node); }

}  // namespace ringtrain::backends::cpu
