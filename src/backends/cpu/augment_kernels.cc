// The augmentation ops on the CPU, over NHWC images [H, W, C]; every example draws its
// own parameters from the step's stream (backends/cpu/augment_draws.h). No weights.
//   RandomFlip         training: each example flipped left-right and/or upside down as
//                      its draws say (op.flip_horizontal, flip_vertical: tf.keras 2's four
//                      outcomes for "horizontal_and_vertical"); inference: the identity
//                      (the input pointer passes through). Backward applies the same
//                      flips to the gradient (a flip is its own adjoint).
//   RandomCrop         [H, W, C] -> [op.crop_height, op.crop_width, C]. Training with an
//                      input at least the target in both dimensions: each example cropped
//                      at its own random offset. Inference, and training on a smaller
//                      input: Keras' largest centred window of the target's aspect ratio,
//                      resized with TF's bilinear resize (half-pixel centres) unless it
//                      already has the target size (then copied). Backward: the adjoint
//                      of what the last training Forward did.
//   RandomTranslation  training: each example resampled through its own transform
//   RandomRotation     (DrawAffineTransform) by TF's ImageProjectiveTransformV3
//                      (backends/cpu/image_transform.h) with op.fill_mode,
//                      op.interpolation and op.fill_value; inference: the identity.
//                      Backward: the sampling's adjoint.
// A training Forward that draws needs KernelArgs::step (INTERNAL without it).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/augment_draws.h"
#include "backends/cpu/cpu_kernel.h"
#include "backends/cpu/image_transform.h"

namespace ringtrain::backends::cpu {
namespace {

// TF's compute_interpolation_weights with half-pixel centres (resize_bilinear_op.cc):
// in = (i + 0.5) * scale - 0.5, scale = in_size / out_size in float.
template <typename Lerp>
void ResizeWeights(int in_size, int out_size, std::vector<Lerp>* out) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  out->resize(static_cast<size_t>(out_size));
  for (int i = 0; i < out_size; ++i) {
    const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float in_f = std::floor(in);
    Lerp& l = (*out)[static_cast<size_t>(i)];
    l.lower = std::max(static_cast<int>(in_f), 0);
    l.upper = std::min(static_cast<int>(std::ceil(in)), in_size - 1);
    l.lerp = in - in_f;
  }
}

// A kernel of one image input whose Backward needs nothing from KernelArgs.
class AugmentKernel : public CpuKernel {
 public:
  Status Backward(const KernelArgs&, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) final {
    (*din)[0] = BackwardOne(dout, need_din[0]);
    return Status::Ok();
  }

 protected:
  virtual const float* BackwardOne(const float* dout, bool need_din) = 0;
};

// ---- RandomFlip

class RandomFlipKernel final : public AugmentKernel {
 public:
  explicit RandomFlipKernel(const ops::Node& node)
      : label_(node.Label()),
        shape_(node.input_shapes[0]),
        input_size_(InputSize(node)),
        horizontal_(node.op.flip_horizontal),
        vertical_(node.op.flip_vertical),
        key_(node.op.key) {}

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (!training) return in[0];  // Keras: the identity at inference
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    EnsureSize(flips_, static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) flips_[static_cast<size_t>(b)] = DrawFlips(*step, key_, b, horizontal_, vertical_);
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * input_size_);
    Apply(in[0], batch, out);
    batch_ = batch;
    return out;
  }

 protected:
  const float* BackwardOne(const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * input_size_);
    Apply(dout, batch_, din);
    return din;
  }

 private:
  // dst = the flips of src, per example (flips_ says which).
  void Apply(const float* src, int batch, float* dst) const {
    const ops::Shape& s = shape_;
    const int64_t h = s[0], w = s[1], c = s[2], n = h * w * c;
    for (int b = 0; b < batch; ++b) {
      const int f = flips_[static_cast<size_t>(b)];
      const float* x = src + b * n;
      float* y = dst + b * n;
      for (int64_t r = 0; r < h; ++r) {
        const float* row = x + ((f & 2) ? h - 1 - r : r) * w * c;
        float* out = y + r * w * c;
        if (!(f & 1)) {
          std::memcpy(out, row, static_cast<size_t>(w * c) * sizeof(float));
          continue;
        }
        for (int64_t col = 0; col < w; ++col) {
          const float* src_px = row + (w - 1 - col) * c;
          float* dst_px = out + col * c;
          for (int64_t k = 0; k < c; ++k) dst_px[k] = src_px[k];
        }
      }
    }
  }

  const std::string label_;
  const ops::Shape shape_;
  const int64_t input_size_;
  const bool horizontal_, vertical_;
  const uint64_t key_;
  int batch_ = 0;
  std::vector<int> flips_;  // bit 0: left-right, bit 1: upside down, per example of the last training Forward
  std::vector<float> out_, din_;
};

// ---- RandomCrop

class RandomCropKernel final : public AugmentKernel {
 public:
  explicit RandomCropKernel(const ops::Node& node)
      : label_(node.Label()),
        in_h_(node.input_shapes[0][0]),
        in_w_(node.input_shapes[0][1]),
        height_(node.op.crop_height),
        width_(node.op.crop_width),
        channels_(node.input_shapes[0][2]),
        key_(node.op.key),
        input_size_(InputSize(node)),
        output_size_(node.output_size()),
        random_ok_(in_h_ >= height_ && in_w_ >= width_) {
    // Keras' centred window of the target's aspect ratio (computed in double as Keras 3
    // does in Python), at least one pixel.
    const int H = in_h_, W = in_w_, height = height_, width = width_;
    int crop_h = static_cast<int>(static_cast<double>(static_cast<int64_t>(W) * height) / width);
    crop_h = std::max(std::min(H, crop_h), 1);
    int crop_w = static_cast<int>(static_cast<double>(static_cast<int64_t>(H) * width) / height);
    crop_w = std::max(std::min(W, crop_w), 1);
    box_h0_ = static_cast<int>(static_cast<double>(H - crop_h) / 2);
    box_w0_ = static_cast<int>(static_cast<double>(W - crop_w) / 2);
    box_is_target_ = crop_h == height && crop_w == width;
    ResizeWeights(crop_h, height, &rows_);
    ResizeWeights(crop_w, width, &cols_);
  }

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in_list, int batch,
                                 bool training) override {
    const float* in = in_list[0];
    const int64_t n_in = input_size_, n_out = output_size_;
    const bool random = training && random_ok_;
    const StepContext* step = nullptr;
    if (random) {
      RT_ASSIGN_OR_RETURN(step, TrainingStep(args, label_));
    }
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * n_out);
    if (random) {
      EnsureSize(offsets_, 2 * static_cast<size_t>(batch));
      for (int b = 0; b < batch; ++b) {
        int h0 = 0, w0 = 0;
        DrawCropOffsets(*step, key_, b, in_h_, in_w_, height_, width_, &h0, &w0);
        offsets_[2 * static_cast<size_t>(b)] = h0;
        offsets_[2 * static_cast<size_t>(b) + 1] = w0;
        CropAt(in + b * n_in, h0, w0, out + b * n_out);
      }
    } else {
      for (int b = 0; b < batch; ++b) {
        if (box_is_target_) {
          CropAt(in + b * n_in, box_h0_, box_w0_, out + b * n_out);
        } else {
          Resize(in + b * n_in, out + b * n_out);
        }
      }
    }
    if (training) {
      batch_ = batch;
      last_random_ = random;
    }
    return out;
  }

 protected:
  const float* BackwardOne(const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    const int64_t n_in = input_size_, n_out = output_size_;
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * n_in);
    for (int b = 0; b < batch_; ++b) {
      if (last_random_) {
        CropAtAdjoint(dout + b * n_out, h_start(b), w_start(b), din + b * n_in);
      } else if (box_is_target_) {
        CropAtAdjoint(dout + b * n_out, box_h0_, box_w0_, din + b * n_in);
      } else {
        ResizeAdjoint(dout + b * n_out, din + b * n_in);
      }
    }
    return din;
  }

 private:
  // One output row's or column's source along one axis, in TF's resize terms.
  struct Lerp {
    int lower, upper;
    float lerp;
  };

  // Example i's crop offset in the last training Forward (random path only).
  int h_start(int i) const { return offsets_[2 * static_cast<size_t>(i)]; }
  int w_start(int i) const { return offsets_[2 * static_cast<size_t>(i) + 1]; }

  void CropAt(const float* x, int h0, int w0, float* y) const {
    const int64_t W = in_w_, c = channels_, row = static_cast<int64_t>(width_) * c;
    for (int r = 0; r < height_; ++r) {
      std::memcpy(y + r * row, x + ((h0 + r) * W + w0) * c, static_cast<size_t>(row) * sizeof(float));
    }
  }

  void CropAtAdjoint(const float* dy, int h0, int w0, float* dx) const {
    const int64_t W = in_w_, c = channels_, row = static_cast<int64_t>(width_) * c;
    std::memset(dx, 0, static_cast<size_t>(input_size_) * sizeof(float));
    for (int r = 0; r < height_; ++r) {
      std::memcpy(dx + ((h0 + r) * W + w0) * c, dy + r * row, static_cast<size_t>(row) * sizeof(float));
    }
  }

  // TF's ResizeBilinear (half-pixel centres) of the centred window, in its order:
  // top = tl + (tr - tl) * xl, bottom = bl + (br - bl) * xl, out = top + (bottom - top) * yl.
  void Resize(const float* x, float* y) const {
    const int64_t W = in_w_, c = channels_;
    const float* box = x + (static_cast<int64_t>(box_h0_) * W + box_w0_) * c;
    for (int r = 0; r < height_; ++r) {
      const Lerp& ly = rows_[static_cast<size_t>(r)];
      const float* top_row = box + ly.lower * W * c;
      const float* bottom_row = box + ly.upper * W * c;
      for (int col = 0; col < width_; ++col, y += c) {
        const Lerp& lx = cols_[static_cast<size_t>(col)];
        const float *tl = top_row + lx.lower * c, *tr = top_row + lx.upper * c;
        const float *bl = bottom_row + lx.lower * c, *br = bottom_row + lx.upper * c;
        const float xl = lx.lerp, yl = ly.lerp;
        for (int64_t k = 0; k < c; ++k) {
          const float top = tl[k] + (tr[k] - tl[k]) * xl;
          const float bottom = bl[k] + (br[k] - bl[k]) * xl;
          y[k] = top + (bottom - top) * yl;
        }
      }
    }
  }

  void ResizeAdjoint(const float* dy, float* dx) const {
    const int64_t W = in_w_, c = channels_;
    std::memset(dx, 0, static_cast<size_t>(input_size_) * sizeof(float));
    float* box = dx + (static_cast<int64_t>(box_h0_) * W + box_w0_) * c;
    for (int r = 0; r < height_; ++r) {
      const Lerp& ly = rows_[static_cast<size_t>(r)];
      float* top_row = box + ly.lower * W * c;
      float* bottom_row = box + ly.upper * W * c;
      for (int col = 0; col < width_; ++col, dy += c) {
        const Lerp& lx = cols_[static_cast<size_t>(col)];
        float *tl = top_row + lx.lower * c, *tr = top_row + lx.upper * c;
        float *bl = bottom_row + lx.lower * c, *br = bottom_row + lx.upper * c;
        const float xl = lx.lerp, yl = ly.lerp;
        for (int64_t k = 0; k < c; ++k) {
          const float dtop = dy[k] * (1.0f - yl), dbottom = dy[k] * yl;
          tl[k] += dtop * (1.0f - xl);
          tr[k] += dtop * xl;
          bl[k] += dbottom * (1.0f - xl);
          br[k] += dbottom * xl;
        }
      }
    }
  }

  const std::string label_;
  const int in_h_, in_w_;
  const int height_, width_, channels_;
  const uint64_t key_;
  const int64_t input_size_, output_size_;
  const bool random_ok_;  // input >= target in both dimensions
  int box_h0_ = 0, box_w0_ = 0;  // the centred window (deterministic path)
  bool box_is_target_ = false;   // the window already has the target size
  std::vector<Lerp> rows_, cols_;
  int batch_ = 0;
  bool last_random_ = false;
  std::vector<int> offsets_;  // (h0, w0) per example of the last training Forward's random path
  std::vector<float> out_, din_;
};

// ---- RandomTranslation, RandomRotation

class RandomAffineKernel final : public AugmentKernel {
 public:
  explicit RandomAffineKernel(const ops::Node& node)
      : label_(node.Label()), op_(node.op), input_size_(InputSize(node)), fill_value_(node.op.fill_value) {
    sampler_.height = node.input_shapes[0][0];
    sampler_.width = node.input_shapes[0][1];
    sampler_.channels = node.input_shapes[0][2];
    sampler_.fill_mode = node.op.fill_mode;
    sampler_.interpolation = node.op.interpolation;
    fill_row_.assign(static_cast<size_t>(sampler_.channels), fill_value_);
    sink_.assign(static_cast<size_t>(sampler_.channels), 0.0f);
  }

  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in_list, int batch,
                                 bool training) override {
    const float* in = in_list[0];
    if (!training) return in;  // Keras: the identity at inference
    RT_ASSIGN_OR_RETURN(const StepContext* step, TrainingStep(args, label_));
    const size_t n = static_cast<size_t>(input_size_);
    float* out = EnsureSize(out_, static_cast<size_t>(batch) * n);
    float* t = EnsureSize(transforms_, static_cast<size_t>(batch) * 8);
    for (int b = 0; b < batch; ++b) {
      DrawAffineTransform(*step, op_, sampler_.height, sampler_.width, b, t + static_cast<size_t>(b) * 8);
      sampler_.Forward(t + static_cast<size_t>(b) * 8, in + b * n, fill_row_.data(), out + b * n);
    }
    batch_ = batch;
    return out;
  }

 protected:
  const float* BackwardOne(const float* dout, bool need_din) override {
    if (!need_din) return nullptr;
    const size_t n = static_cast<size_t>(input_size_);
    float* din = EnsureSize(din_, static_cast<size_t>(batch_) * n);
    std::memset(din, 0, static_cast<size_t>(batch_) * n * sizeof(float));
    for (int b = 0; b < batch_; ++b) {
      sampler_.AddAdjoint(&transforms_[static_cast<size_t>(b) * 8], dout + b * n, din + b * n, sink_.data());
    }
    return din;
  }

 private:
  const std::string label_;
  const ops::Op op_;  // the transform's kind, key and factor ranges
  const int64_t input_size_;
  const float fill_value_;
  ProjectiveSampler sampler_;
  int batch_ = 0;
  // transforms_: 8 floats per example of the last training Forward; fill_row_: `channels`
  // copies of fill_value; sink_: the sampler's scratch for taps outside the image.
  std::vector<float> transforms_, fill_row_, sink_, out_, din_;
};

}  // namespace

std::unique_ptr<CpuKernel> NewRandomFlipKernel(const ops::Node& node) {
  return std::make_unique<RandomFlipKernel>(node);
}
std::unique_ptr<CpuKernel> NewRandomCropKernel(const ops::Node& node) {
  return std::make_unique<RandomCropKernel>(node);
}
std::unique_ptr<CpuKernel> NewRandomAffineKernel(const ops::Node& node) {
  return std::make_unique<RandomAffineKernel>(node);
}

}  // namespace ringtrain::backends::cpu
