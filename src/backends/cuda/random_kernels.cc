// Dropout, RandomFlip, RandomCrop, RandomTranslation and RandomRotation on the GPU
// (backends/cuda/random_kernels.h): each kernel takes its draws' key from the step
// context on the host and launches backends/cuda/random_launch.h's kernels, which draw
// and map the elements with the CPU layers' formulas (backends/cuda/random_math.h).
#include "backends/cuda/random_kernels.h"

#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/random_launch.h"
#include "backends/cuda/random_math.h"

namespace ringtrain::gpu {
namespace {

// The step a training Forward runs in; the draws need it.
StatusOr<rm::StepKey> StepOf(const backends::KernelArgs& args, const std::string& label) {
  if (args.step == nullptr) {
    return InternalError(label + ": a training Forward needs the step context (KernelArgs::step) for its draws");
  }
  rm::StepKey s;
  s.seed = args.step->seed;
  s.step = args.step->step;
  s.replica = args.step->replica;
  return s;
}

// The node's per-example image, [H, W, C] with every dimension positive.
StatusOr<rm::ImageDims> ImageOf(const ops::Node& node) {
  if (node.input_shapes.size() != 1 || node.input_shapes[0].size() != 3) {
    return InvalidArgumentError(node.Label() + ": the CUDA kernel takes one input of images [height, width, channels]");
  }
  const ops::Shape& s = node.input_shapes[0];
  if (s[0] < 1 || s[1] < 1 || s[2] < 1) return InvalidArgumentError(node.Label() + ": an empty image");
  rm::ImageDims d;
  d.height = s[0];
  d.width = s[1];
  d.channels = s[2];
  return d;
}

bool NeedsInputGrad(const ops::Node& node) { return !node.need_input_grad.empty() && node.need_input_grad[0]; }

// ---------------------------------------------------------------- Dropout

class DropoutKernel final : public backends::Kernel {
 public:
  DropoutKernel(const ops::Node& node, const GpuContext* gpu)
      : label_(node.Label()),
        rate_(node.op.rate),
        scale_(node.op.dropout_scale),
        name_hash_(node.op.name_hash),
        layer_seed_(node.op.layer_seed),
        need_din_(NeedsInputGrad(node)),
        gpu_(gpu),
        size_(static_cast<size_t>(node.output_size())) {}

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * size_;
    RT_RETURN_IF_ERROR(y_.Grow(n, label_ + " output", gpu_->ordinal()));
    if (need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, label_ + " input gradient", gpu_->ordinal()));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    masked_ = training && rate_ > 0.0f;
    if (!masked_) return in[0];  // inference, rate 0: the identity
    RT_ASSIGN_OR_RETURN(const rm::StepKey s, StepOf(args, label_));
    key_ = rm::DropoutStreamKey(s.seed, s.step, s.replica, name_hash_, layer_seed_);
    n_ = static_cast<size_t>(batch) * size_;
    RT_RETURN_IF_ERROR(CudaCheck(DropoutForward(in[0], n_, key_, rate_, scale_, y_.get(), gpu_->compute()),
                                 "DropoutForward(" + label_ + ")", gpu_->ordinal()));
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    if (!masked_) {
      (*din)[0] = dy;
      return Status::Ok();
    }
    if (dx_.get() == nullptr) return InternalError(label_ + ": input gradient asked for, but none was reserved");
    // The gradient takes the forward's mask: the same draws, recomputed.
    RT_RETURN_IF_ERROR(CudaCheck(DropoutForward(dy, n_, key_, rate_, scale_, dx_.get(), gpu_->compute()),
                                 "DropoutForward(" + label_ + " gradient)", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string label_;
  const float rate_, scale_;
  const uint64_t name_hash_, layer_seed_;
  const bool need_din_;
  const GpuContext* gpu_;
  const size_t size_;  // floats per example
  DeviceBuffer<float> y_, dx_;
  bool masked_ = false;  // the last Forward applied a mask
  uint64_t key_ = 0;     // its stream
  size_t n_ = 0;         // its elements
};

// ---------------------------------------------------------------- RandomFlip

class FlipKernel final : public backends::Kernel {
 public:
  FlipKernel(const ops::Node& node, const rm::ImageDims& d, const GpuContext* gpu)
      : label_(node.Label()),
        key_(node.op.key),
        horizontal_(node.op.flip_horizontal),
        vertical_(node.op.flip_vertical),
        need_din_(NeedsInputGrad(node)),
        d_(d),
        gpu_(gpu) {}

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(d_.size());
    RT_RETURN_IF_ERROR(y_.Grow(n, label_ + " output", gpu_->ordinal()));
    RT_RETURN_IF_ERROR(flips_.Grow(static_cast<size_t>(batch), label_ + " flips", gpu_->ordinal()));
    if (need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, label_ + " input gradient", gpu_->ordinal()));
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (!training) return in[0];  // Keras: the identity at inference
    RT_ASSIGN_OR_RETURN(const rm::StepKey s, StepOf(args, label_));
    const int id = gpu_->ordinal();
    RT_RETURN_IF_ERROR(CudaCheck(DrawFlipsOnDevice(s, key_, batch, horizontal_, vertical_, flips_.get(),
                                                   gpu_->compute()),
                                 "DrawFlips(" + label_ + ")", id));
    RT_RETURN_IF_ERROR(CudaCheck(FlipImages(in[0], batch, d_, flips_.get(), y_.get(), gpu_->compute()),
                                 "FlipImages(" + label_ + ")", id));
    batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    if (dx_.get() == nullptr) return InternalError(label_ + ": input gradient asked for, but none was reserved");
    // A flip is its own adjoint.
    RT_RETURN_IF_ERROR(CudaCheck(FlipImages(dy, batch_, d_, flips_.get(), dx_.get(), gpu_->compute()),
                                 "FlipImages(" + label_ + " gradient)", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string label_;
  const uint64_t key_;
  const bool horizontal_, vertical_, need_din_;
  const rm::ImageDims d_;
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_;
  DeviceBuffer<int32_t> flips_;  // per example of the last training Forward: bit 0 left-right, bit 1 upside down
  int batch_ = 0;                // of the last training Forward
};

// ---------------------------------------------------------------- RandomCrop

class CropKernel final : public backends::Kernel {
 public:
  CropKernel(const ops::Node& node, const rm::ImageDims& in, const GpuContext* gpu)
      : label_(node.Label()),
        key_(node.op.key),
        height_(node.op.crop_height),
        width_(node.op.crop_width),
        need_din_(NeedsInputGrad(node)),
        in_(in),
        random_ok_(in.height >= height_ && in.width >= width_),
        box_(rm::CenteredBox(in, height_, width_)),
        gpu_(gpu) {}

  Status Reserve(int batch) override {
    const int id = gpu_->ordinal();
    const size_t out = static_cast<size_t>(batch) * height_ * width_ * in_.channels;
    RT_RETURN_IF_ERROR(y_.Grow(out, label_ + " output", id));
    if (random_ok_) RT_RETURN_IF_ERROR(offsets_.Grow(2 * static_cast<size_t>(batch), label_ + " offsets", id));
    if (need_din_) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * static_cast<size_t>(in_.size()),
                                  label_ + " input gradient", id));
    }
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    const int id = gpu_->ordinal();
    const bool random = training && random_ok_;
    if (random) {
      RT_ASSIGN_OR_RETURN(const rm::StepKey s, StepOf(args, label_));
      RT_RETURN_IF_ERROR(CudaCheck(DrawCropOffsetsOnDevice(s, key_, batch, in_, height_, width_, offsets_.get(),
                                                           gpu_->compute()),
                                   "DrawCropOffsets(" + label_ + ")", id));
      RT_RETURN_IF_ERROR(CudaCheck(CropImages(in[0], batch, in_, height_, width_, offsets_.get(), 0, 0, y_.get(),
                                              gpu_->compute()),
                                   "CropImages(" + label_ + ")", id));
    } else if (box_.is_target) {
      RT_RETURN_IF_ERROR(CudaCheck(CropImages(in[0], batch, in_, height_, width_, nullptr, box_.h0, box_.w0,
                                              y_.get(), gpu_->compute()),
                                   "CropImages(" + label_ + ")", id));
    } else {
      RT_RETURN_IF_ERROR(CudaCheck(ResizeImages(in[0], batch, in_, box_, height_, width_, y_.get(), gpu_->compute()),
                                   "ResizeImages(" + label_ + ")", id));
    }
    if (training) {
      batch_ = batch;
      last_random_ = random;
    }
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    if (dx_.get() == nullptr) return InternalError(label_ + ": input gradient asked for, but none was reserved");
    const int id = gpu_->ordinal();
    if (last_random_) {
      RT_RETURN_IF_ERROR(CudaCheck(CropImagesAdjoint(dy, batch_, in_, height_, width_, offsets_.get(), 0, 0,
                                                     dx_.get(), gpu_->compute()),
                                   "CropImagesAdjoint(" + label_ + ")", id));
    } else if (box_.is_target) {
      RT_RETURN_IF_ERROR(CudaCheck(CropImagesAdjoint(dy, batch_, in_, height_, width_, nullptr, box_.h0, box_.w0,
                                                     dx_.get(), gpu_->compute()),
                                   "CropImagesAdjoint(" + label_ + ")", id));
    } else {
      RT_RETURN_IF_ERROR(CudaCheck(ResizeImagesAdjoint(dy, batch_, in_, box_, height_, width_, dx_.get(),
                                                       gpu_->compute()),
                                   "ResizeImagesAdjoint(" + label_ + ")", id));
    }
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string label_;
  const uint64_t key_;
  const int height_, width_;
  const bool need_din_;
  const rm::ImageDims in_;
  const bool random_ok_;   // input >= target in both dimensions: training crops at random
  const rm::CropBox box_;  // the deterministic path's centred window
  const GpuContext* gpu_;
  DeviceBuffer<float> y_, dx_;
  DeviceBuffer<int32_t> offsets_;  // per example of the last random Forward: h_start, w_start
  int batch_ = 0;                  // of the last training Forward
  bool last_random_ = false;       // it cropped at random
};

// ---------------------------------------------------------------- RandomTranslation, RandomRotation

class AffineKernel final : public backends::Kernel {
 public:
  AffineKernel(const ops::Node& node, const rm::ImageDims& d, const GpuContext* gpu)
      : label_(node.Label()),
        op_(node.op),
        rotation_(node.op.kind == ops::OpKind::kRandomRotation),
        need_din_(NeedsInputGrad(node)),
        d_(d),
        gpu_(gpu) {
    sampling_.fill_mode = node.op.fill_mode;
    sampling_.interpolation = node.op.interpolation;
    sampling_.fill_value = node.op.fill_value;
  }

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(d_.size());
    RT_RETURN_IF_ERROR(y_.Grow(n, label_ + " output", gpu_->ordinal()));
    if (need_din_) RT_RETURN_IF_ERROR(dx_.Grow(n, label_ + " input gradient", gpu_->ordinal()));
    if (transforms_.size() < static_cast<size_t>(batch) * 8) transforms_.resize(static_cast<size_t>(batch) * 8);
    return Status::Ok();
  }

  StatusOr<const float*> Forward(const backends::KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (!training) return in[0];  // Keras: the identity at inference
    RT_ASSIGN_OR_RETURN(const rm::StepKey s, StepOf(args, label_));
    // Drawn on the host (the rotation's cos and sin are the host libm's, as on the CPU)
    // and handed to the kernels as launch arguments.
    if (transforms_.size() < static_cast<size_t>(batch) * 8) transforms_.resize(static_cast<size_t>(batch) * 8);
    for (int b = 0; b < batch; ++b) {
      float* t = transforms_.data() + static_cast<size_t>(b) * 8;
      if (rotation_) {
        rm::DrawRotation(s, op_.key, b, d_, op_.angle_factor_lo, op_.angle_factor_hi, t);
      } else {
        rm::DrawTranslation(s, op_.key, b, d_, op_.height_factor_lo, op_.height_factor_hi, op_.width_factor_lo,
                            op_.width_factor_hi, t);
      }
    }
    RT_RETURN_IF_ERROR(CudaCheck(AffineImages(in[0], batch, d_, transforms_.data(), sampling_, y_.get(),
                                              gpu_->compute()),
                                 "AffineImages(" + label_ + ")", gpu_->ordinal()));
    batch_ = batch;
    return static_cast<const float*>(y_.get());
  }

  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    if (dx_.get() == nullptr) return InternalError(label_ + ": input gradient asked for, but none was reserved");
    RT_RETURN_IF_ERROR(CudaCheck(AffineImagesAdjoint(dy, batch_, d_, transforms_.data(), sampling_, dx_.get(),
                                                     gpu_->compute()),
                                 "AffineImagesAdjoint(" + label_ + ")", gpu_->ordinal()));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  const std::string label_;
  const ops::Op op_;
  const bool rotation_, need_din_;
  const rm::ImageDims d_;
  const GpuContext* gpu_;
  AffineSampling sampling_;
  DeviceBuffer<float> y_, dx_;
  std::vector<float> transforms_;  // host: 8 floats per example of the last training Forward
  int batch_ = 0;                  // of the last training Forward
};

}  // namespace

StatusOr<std::unique_ptr<backends::Kernel>> NewDropoutKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kDropout) return InvalidArgumentError(node.Label() + ": not a Dropout op");
  if (!(node.op.rate >= 0.0f && node.op.rate < 1.0f)) {
    return InvalidArgumentError(node.Label() + ": Dropout's rate must be in [0, 1), got " +
                                std::to_string(node.op.rate));
  }
  if (node.input_shapes.size() != 1 || ops::NumElements(node.input_shapes[0]) != node.output_size()) {
    return InvalidArgumentError(node.Label() + ": Dropout takes one input of its output's shape");
  }
  return std::unique_ptr<backends::Kernel>(new DropoutKernel(node, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewRandomFlipKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kRandomFlip) return InvalidArgumentError(node.Label() + ": not a RandomFlip op");
  RT_ASSIGN_OR_RETURN(const rm::ImageDims d, ImageOf(node));
  if (!node.op.flip_horizontal && !node.op.flip_vertical) {
    return InvalidArgumentError(node.Label() + ": RandomFlip flips neither way (its op names no direction)");
  }
  return std::unique_ptr<backends::Kernel>(new FlipKernel(node, d, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewRandomCropKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kRandomCrop) return InvalidArgumentError(node.Label() + ": not a RandomCrop op");
  RT_ASSIGN_OR_RETURN(const rm::ImageDims d, ImageOf(node));
  const ops::Shape want = {node.op.crop_height, node.op.crop_width, d.channels};
  if (node.op.crop_height < 1 || node.op.crop_width < 1 || node.output_shape != want) {
    return InvalidArgumentError(node.Label() + ": RandomCrop's target " + std::to_string(node.op.crop_height) + "x" +
                                std::to_string(node.op.crop_width) + " does not match its output shape");
  }
  return std::unique_ptr<backends::Kernel>(new CropKernel(node, d, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewRandomAffineKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kRandomRotation && node.op.kind != ops::OpKind::kRandomTranslation) {
    return InvalidArgumentError(node.Label() + ": not a RandomRotation or RandomTranslation op");
  }
  RT_ASSIGN_OR_RETURN(const rm::ImageDims d, ImageOf(node));
  return std::unique_ptr<backends::Kernel>(new AffineKernel(node, d, gpu));
}

}  // namespace ringtrain::gpu
