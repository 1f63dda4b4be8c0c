// The CUDA kernels (backends/kernel.h) of backends/cuda/shape_kernels.h: average and global
// pooling, zero padding, rescaling, concatenation, Multiply, and Add of any number of
// inputs, each a thin class over the launches of backends/cuda/shape_launch.h that owns
// its output and input-gradient buffers.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/shape_kernels.h"
#include "backends/cuda/shape_launch.h"
#include "backends/cuda/shape_math.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds compile this file with the backend's other kernels.
namespace pool_shape {
namespace {

// What every kernel here keeps of its node: its name, the GPU, the per-example sizes and
// which input gradients it may be asked for.
class ShapeKernel : public backends::Kernel {
 protected:
  ShapeKernel(const ops::Node& node, const GpuContext* gpu)
      : name_(node.name), gpu_(gpu), out_size_(node.output_size()), need_input_grad_(node.need_input_grad) {
    need_input_grad_.resize(node.inputs.size(), false);
    for (const ops::Shape& s : node.input_shapes) in_sizes_.push_back(ops::NumElements(s));
    in_sizes_.resize(node.inputs.size(), 0);
  }

  // A launch's error as a Status naming the call and the node.
  Status Check(cudaError_t e, const char* call) const {
    return CudaCheck(e, std::string(call) + "(" + name_ + ")", gpu_->ordinal());
  }
  Status Grow(DeviceBuffer<float>* b, size_t n, const std::string& what) const {
    return b->Grow(n, name_ + " " + what, gpu_->ordinal());
  }
  // Input k's gradient buffer, grown where the node may ask for it.
  Status GrowInputGrads(int batch, std::vector<DeviceBuffer<float>>* dx) const {
    dx->resize(in_sizes_.size());
    for (size_t k = 0; k < in_sizes_.size(); ++k) {
      if (!need_input_grad_[k]) continue;
      RT_RETURN_IF_ERROR(Grow(&(*dx)[k], static_cast<size_t>(batch) * static_cast<size_t>(in_sizes_[k]),
                              "input " + std::to_string(k) + " gradient"));
    }
    return Status::Ok();
  }
  // The buffer for input k's gradient, or INTERNAL when the node was built without it.
  StatusOr<float*> InputGrad(std::vector<DeviceBuffer<float>>* dx, size_t k) const {
    if (k >= dx->size() || (*dx)[k].get() == nullptr) {
      return InternalError(name_ + ": the gradient of input " + std::to_string(k) +
                           " asked for, but the kernel was built without one");
    }
    return (*dx)[k].get();
  }
  Status CheckBatch() const {
    if (batch_ <= 0) return FailedPreconditionError(name_ + ": Backward without a training Forward");
    return Status::Ok();
  }

  const std::string name_;
  const GpuContext* gpu_;
  const int64_t out_size_;  // floats per example
  std::vector<int64_t> in_sizes_;
  std::vector<bool> need_input_grad_;
  int batch_ = 0;  // of the last training Forward
};

// ---------------------------------------------------------------- AvgPool2D

class AvgPoolKernel final : public ShapeKernel {
 public:
  AvgPoolKernel(const ops::Node& node, const GpuContext* gpu) : ShapeKernel(node, gpu), g_(node.op.window) {}

  Status Reserve(int batch) override {
    RT_RETURN_IF_ERROR(Grow(&y_, static_cast<size_t>(batch) * out_size_, "output"));
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    RT_RETURN_IF_ERROR(Check(AvgPoolForward(g_, in[0], batch, y_.get(), gpu_->compute()), "AvgPoolForward"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    RT_RETURN_IF_ERROR(CheckBatch());
    RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, 0));
    RT_RETURN_IF_ERROR(Check(AvgPoolBackward(g_, dy, batch_, dx, gpu_->compute()), "AvgPoolBackward"));
    (*din)[0] = dx;
    return Status::Ok();
  }

 private:
  const ops::Window g_;
  DeviceBuffer<float> y_;
  std::vector<DeviceBuffer<float>> dx_;
};

// ---------------------------------------------------------------- GlobalMaxPool2D, GlobalAvgPool2D

class GlobalPoolKernel final : public ShapeKernel {
 public:
  GlobalPoolKernel(const ops::Node& node, const GpuContext* gpu, bool max)
      : ShapeKernel(node, gpu),
        max_(max),
        pixels_(node.input_shapes[0][0] * node.input_shapes[0][1]),
        channels_(node.input_shapes[0][2]) {}

  Status Reserve(int batch) override {
    const size_t outputs = static_cast<size_t>(batch) * channels_;
    RT_RETURN_IF_ERROR(Grow(&y_, outputs, "output"));
    if (max_ && need_input_grad_[0]) {
      RT_RETURN_IF_ERROR(argmax_.Grow(outputs, name_ + " argmax", gpu_->ordinal()));
    }
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (max_) {
      int32_t* arg = training ? argmax_.get() : nullptr;  // null when no gradient is wanted
      RT_RETURN_IF_ERROR(Check(GlobalMaxPoolForward(in[0], batch, pixels_, channels_, y_.get(), arg, gpu_->compute()),
                               "GlobalMaxPoolForward"));
    } else {
      RT_RETURN_IF_ERROR(Check(GlobalAvgPoolForward(in[0], batch, pixels_, channels_, y_.get(), gpu_->compute()),
                               "GlobalAvgPoolForward"));
    }
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    RT_RETURN_IF_ERROR(CheckBatch());
    RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, 0));
    if (max_) {
      if (argmax_.get() == nullptr) return InternalError(name_ + ": no argmax kept for the gradient");
      RT_RETURN_IF_ERROR(
          Check(GlobalMaxPoolBackward(dy, argmax_.get(), batch_, pixels_, channels_, dx, gpu_->compute()),
                "GlobalMaxPoolBackward"));
    } else {
      RT_RETURN_IF_ERROR(
          Check(GlobalAvgPoolBackward(dy, batch_, pixels_, channels_, dx, gpu_->compute()), "GlobalAvgPoolBackward"));
    }
    (*din)[0] = dx;
    return Status::Ok();
  }

 private:
  const bool max_;
  const int pixels_, channels_;
  DeviceBuffer<float> y_;
  DeviceBuffer<int32_t> argmax_;
  std::vector<DeviceBuffer<float>> dx_;
};

// ---------------------------------------------------------------- ZeroPadding2D

class ZeroPaddingKernel final : public ShapeKernel {
 public:
  ZeroPaddingKernel(const ops::Node& node, const GpuContext* gpu, const PadGeometry& p)
      : ShapeKernel(node, gpu), p_(p) {}

  Status Reserve(int batch) override {
    RT_RETURN_IF_ERROR(Grow(&y_, static_cast<size_t>(batch) * out_size_, "output"));
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    RT_RETURN_IF_ERROR(Check(ZeroPadForward(p_, in[0], batch, y_.get(), gpu_->compute()), "ZeroPadForward"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    RT_RETURN_IF_ERROR(CheckBatch());
    RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, 0));
    RT_RETURN_IF_ERROR(Check(ZeroPadBackward(p_, dy, batch_, dx, gpu_->compute()), "ZeroPadBackward"));
    (*din)[0] = dx;
    return Status::Ok();
  }

 private:
  const PadGeometry p_;
  DeviceBuffer<float> y_;
  std::vector<DeviceBuffer<float>> dx_;
};

// ---------------------------------------------------------------- Rescaling

class RescalingKernel final : public ShapeKernel {
 public:
  RescalingKernel(const ops::Node& node, const GpuContext* gpu)
      : ShapeKernel(node, gpu), scale_(node.op.scale_values), offset_(node.op.offset_values) {}

  Status Reserve(int batch) override {
    if (d_scale_.get() == nullptr) {  // the per-channel values, once
      const int id = gpu_->ordinal();
      RT_RETURN_IF_ERROR(d_scale_.Allocate(scale_.size(), name_ + " scale", id));
      RT_RETURN_IF_ERROR(d_offset_.Allocate(offset_.size(), name_ + " offset", id));
      RT_RETURN_IF_ERROR(Check(
          cudaMemcpyAsync(d_scale_.get(), scale_.data(), d_scale_.bytes(), cudaMemcpyHostToDevice, gpu_->compute()),
          "cudaMemcpyAsync(scale)"));
      RT_RETURN_IF_ERROR(Check(
          cudaMemcpyAsync(d_offset_.get(), offset_.data(), d_offset_.bytes(), cudaMemcpyHostToDevice, gpu_->compute()),
          "cudaMemcpyAsync(offset)"));
    }
    RT_RETURN_IF_ERROR(Grow(&y_, static_cast<size_t>(batch) * out_size_, "output"));
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    if (d_scale_.get() == nullptr) return FailedPreconditionError(name_ + ": Forward before Reserve");
    const int64_t n = static_cast<int64_t>(batch) * out_size_;
    RT_RETURN_IF_ERROR(
        Check(RescaleForward(in[0], d_scale_.get(), d_offset_.get(), n, channels(), y_.get(), gpu_->compute()),
              "RescaleForward"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    RT_RETURN_IF_ERROR(CheckBatch());
    RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, 0));
    const int64_t n = static_cast<int64_t>(batch_) * out_size_;
    RT_RETURN_IF_ERROR(
        Check(RescaleBackward(dy, d_scale_.get(), n, channels(), dx, gpu_->compute()), "RescaleBackward"));
    (*din)[0] = dx;
    return Status::Ok();
  }

 private:
  int channels() const { return static_cast<int>(scale_.size()); }

  const std::vector<float> scale_, offset_;  // host copies, the upload's source
  DeviceBuffer<float> d_scale_, d_offset_, y_;
  std::vector<DeviceBuffer<float>> dx_;
};

// ---------------------------------------------------------------- Concatenate

class ConcatenateKernel final : public ShapeKernel {
 public:
  // outer: per example, the rows before the axis; chunks[k]: input k's floats per row.
  ConcatenateKernel(const ops::Node& node, const GpuContext* gpu, int64_t outer, std::vector<int64_t> chunks)
      : ShapeKernel(node, gpu), outer_(outer), chunks_(std::move(chunks)) {
    for (int64_t c : chunks_) {
      offsets_.push_back(row_total_);
      row_total_ += c;
    }
  }

  Status Reserve(int batch) override {
    RT_RETURN_IF_ERROR(Grow(&y_, static_cast<size_t>(batch) * out_size_, "output"));
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    const int64_t rows = static_cast<int64_t>(batch) * outer_;
    for (size_t k = 0; k < chunks_.size(); ++k) {
      RT_RETURN_IF_ERROR(Check(
          ConcatScatter(in[k], rows, chunks_[k], row_total_, offsets_[k], y_.get(), gpu_->compute()), "ConcatScatter"));
    }
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const int64_t rows = static_cast<int64_t>(batch_) * outer_;
    for (size_t k = 0; k < chunks_.size(); ++k) {
      (*din)[k] = nullptr;
      if (!need[k]) continue;
      RT_RETURN_IF_ERROR(CheckBatch());
      RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, k));
      RT_RETURN_IF_ERROR(
          Check(ConcatGather(dy, rows, chunks_[k], row_total_, offsets_[k], dx, gpu_->compute()), "ConcatGather"));
      (*din)[k] = dx;
    }
    return Status::Ok();
  }

 private:
  const int64_t outer_;
  const std::vector<int64_t> chunks_;
  std::vector<int64_t> offsets_;
  int64_t row_total_ = 0;
  DeviceBuffer<float> y_;
  std::vector<DeviceBuffer<float>> dx_;
};

// ---------------------------------------------------------------- Multiply

class MultiplyKernel final : public ShapeKernel {
 public:
  MultiplyKernel(const ops::Node& node, const GpuContext* gpu) : ShapeKernel(node, gpu) {}

  Status Reserve(int batch) override {
    RT_RETURN_IF_ERROR(Grow(&y_, static_cast<size_t>(batch) * out_size_, "output"));
    return GrowInputGrads(batch, &dx_);
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    const int64_t n = static_cast<int64_t>(batch) * out_size_;
    RT_RETURN_IF_ERROR(Check(ElementwiseChain(in.data(), static_cast<int>(in.size()), /*multiply=*/true,
                                              /*relu=*/false, n, y_.get(), gpu_->compute()),
                             "ElementwiseChain(multiply)"));
    if (training) {
      x_.assign(in.begin(), in.end());  // valid until Backward (the executor's contract)
      batch_ = batch;
    }
    return static_cast<const float*>(y_.get());
  }
  // d(x0 * x1 * ...)/dxk = dy times the other inputs, in input order.
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const int64_t n = static_cast<int64_t>(batch_) * out_size_;
    for (size_t k = 0; k < x_.size(); ++k) {
      (*din)[k] = nullptr;
      if (!need[k]) continue;
      RT_RETURN_IF_ERROR(CheckBatch());
      RT_ASSIGN_OR_RETURN(float* dx, InputGrad(&dx_, k));
      chain_.assign(1, dy);
      for (size_t j = 0; j < x_.size(); ++j) {
        if (j != k) chain_.push_back(x_[j]);
      }
      RT_RETURN_IF_ERROR(Check(ElementwiseChain(chain_.data(), static_cast<int>(chain_.size()), /*multiply=*/true,
                                                /*relu=*/false, n, dx, gpu_->compute()),
                               "ElementwiseChain(multiply gradient)"));
      (*din)[k] = dx;
    }
    return Status::Ok();
  }

 private:
  DeviceBuffer<float> y_;
  std::vector<DeviceBuffer<float>> dx_;
  std::vector<const float*> x_;      // the last training Forward's inputs
  std::vector<const float*> chain_;  // Backward's factors, reused
};

// ---------------------------------------------------------------- Add

class AddManyKernel final : public ShapeKernel {
 public:
  AddManyKernel(const ops::Node& node, const GpuContext* gpu, bool relu) : ShapeKernel(node, gpu), relu_(relu) {}

  Status Reserve(int batch) override {
    const size_t n = static_cast<size_t>(batch) * out_size_;
    RT_RETURN_IF_ERROR(Grow(&y_, n, "output"));
    if (relu_) RT_RETURN_IF_ERROR(Grow(&mask_, n, "relu gradient"));
    return Status::Ok();
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    const int64_t n = static_cast<int64_t>(batch) * out_size_;
    RT_RETURN_IF_ERROR(Check(ElementwiseChain(in.data(), static_cast<int>(in.size()), /*multiply=*/false, relu_, n,
                                              y_.get(), gpu_->compute()),
                             "ElementwiseChain(add)"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  // d(x0 + x1 + ...)/dxk = 1: every input gets the output gradient, through the relu's
  // mask (once, shared) when there is one and the executor has not applied it already.
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    const float* g = dy;
    const bool mask = relu_ && !masked_;
    masked_ = false;
    bool any = false;
    for (size_t k = 0; k < need.size(); ++k) any = any || need[k];
    if (mask && any) {
      RT_RETURN_IF_ERROR(CheckBatch());
      if (mask_.get() == nullptr) return InternalError(name_ + ": no buffer for the relu's gradient");
      const int64_t n = static_cast<int64_t>(batch_) * out_size_;
      RT_RETURN_IF_ERROR(Check(ReluMaskGrad(dy, y_.get(), n, mask_.get(), gpu_->compute()), "ReluMaskGrad"));
      g = mask_.get();
    }
    for (size_t k = 0; k < need.size(); ++k) (*din)[k] = need[k] ? g : nullptr;
    return Status::Ok();
  }

  // A following relu runs here (the CPU's Add does the same); its gradient mask is the output.
  bool AbsorbRelu() override {
    relu_ = true;
    return true;
  }
  const float* ReluGradientMask() const override { return relu_ ? y_.get() : nullptr; }
  void GradientMasked() override { masked_ = relu_; }

 private:
  bool relu_;
  bool masked_ = false;  // the next output gradient arrives already masked
  DeviceBuffer<float> y_, mask_;
};

// ---------------------------------------------------------------- factories

Status NeedInputs(const ops::Node& node, size_t at_least) {
  if (node.inputs.size() < at_least || node.input_shapes.size() != node.inputs.size()) {
    return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(node.op.kind) + " needs " +
                                std::to_string(at_least) + " input(s) or more, each with its shape (it has " +
                                std::to_string(node.inputs.size()) + " inputs and " +
                                std::to_string(node.input_shapes.size()) + " shapes)");
  }
  return Status::Ok();
}

Status NeedImage(const ops::Node& node) {
  RT_RETURN_IF_ERROR(NeedInputs(node, 1));
  const ops::Shape& s = node.input_shapes[0];
  if (s.size() != 3 || s[0] < 1 || s[1] < 1 || s[2] < 1) {
    return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(node.op.kind) +
                                " needs a non-empty [height, width, channels] input");
  }
  return Status::Ok();
}

Status NeedSameShapes(const ops::Node& node) {
  for (const ops::Shape& s : node.input_shapes) {
    if (s != node.input_shapes[0] || s != node.output_shape) {
      return InvalidArgumentError(node.Label() + ": " + ops::OpKindName(node.op.kind) +
                                  " needs inputs and output of one shape");
    }
  }
  return Status::Ok();
}

Status NeedKind(const ops::Node& node, ops::OpKind kind) {
  if (node.op.kind != kind) {
    return InvalidArgumentError(node.Label() + ": a " + ops::OpKindName(kind) + " kernel asked for op " +
                                ops::OpKindName(node.op.kind));
  }
  return Status::Ok();
}

using KernelOr = StatusOr<std::unique_ptr<backends::Kernel>>;

KernelOr NewGlobalPool(const ops::Node& node, const GpuContext* gpu, bool max) {
  RT_RETURN_IF_ERROR(NeedKind(node, max ? ops::OpKind::kGlobalMaxPool2D : ops::OpKind::kGlobalAvgPool2D));
  RT_RETURN_IF_ERROR(NeedImage(node));
  if (node.output_size() != node.input_shapes[0][2]) {
    return InvalidArgumentError(node.Label() + ": global pooling's output must hold one value per channel");
  }
  return std::unique_ptr<backends::Kernel>(new GlobalPoolKernel(node, gpu, max));
}

}  // namespace
}  // namespace pool_shape

StatusOr<std::unique_ptr<backends::Kernel>> NewAvgPoolKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kAvgPool2D));
  RT_RETURN_IF_ERROR(pool_shape::NeedImage(node));
  const ops::Window& g = node.op.window;
  const ops::Shape& in = node.input_shapes[0];
  if (g.h != in[0] || g.w != in[1] || g.c != in[2] || g.kh < 1 || g.kw < 1 || g.stride_h < 1 || g.stride_w < 1 ||
      g.pad_top < 0 || g.pad_left < 0 || g.out_h < 1 || g.out_w < 1 ||
      node.output_shape != ops::Shape{g.out_h, g.out_w, g.c}) {
    return InvalidArgumentError(node.Label() + ": the average pooling window does not fit the node's shapes");
  }
  return std::unique_ptr<backends::Kernel>(new pool_shape::AvgPoolKernel(node, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewGlobalMaxPoolKernel(const ops::Node& node, const GpuContext* gpu) {
  return pool_shape::NewGlobalPool(node, gpu, true);
}

StatusOr<std::unique_ptr<backends::Kernel>> NewGlobalAvgPoolKernel(const ops::Node& node, const GpuContext* gpu) {
  return pool_shape::NewGlobalPool(node, gpu, false);
}

StatusOr<std::unique_ptr<backends::Kernel>> NewZeroPaddingKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kZeroPadding2D));
  RT_RETURN_IF_ERROR(pool_shape::NeedImage(node));
  const ops::Shape& in = node.input_shapes[0];
  const ops::Shape& out = node.output_shape;
  PadGeometry p;
  p.in_h = in[0];
  p.in_w = in[1];
  p.c = in[2];
  p.top = node.op.window.pad_top;
  p.left = node.op.window.pad_left;
  if (out.size() != 3 || out[2] != p.c || p.top < 0 || p.left < 0 || out[0] < p.in_h + p.top ||
      out[1] < p.in_w + p.left) {
    return InvalidArgumentError(node.Label() + ": the zero padding does not fit the node's shapes");
  }
  p.out_h = out[0];
  p.out_w = out[1];
  return std::unique_ptr<backends::Kernel>(new pool_shape::ZeroPaddingKernel(node, gpu, p));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewRescalingKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kRescaling));
  RT_RETURN_IF_ERROR(pool_shape::NeedInputs(node, 1));
  const ops::Shape& in = node.input_shapes[0];
  const size_t channels = node.op.scale_values.size();
  if (in.empty() || channels == 0 || static_cast<size_t>(in.back()) != channels ||
      node.op.offset_values.size() != channels || node.output_shape != in) {
    return InvalidArgumentError(node.Label() +
                                ": Rescaling needs one scale and one offset per channel of the "
                                "input's last axis, and its output the input's shape");
  }
  return std::unique_ptr<backends::Kernel>(new pool_shape::RescalingKernel(node, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewConcatenateKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kConcatenate));
  RT_RETURN_IF_ERROR(pool_shape::NeedInputs(node, 1));
  const ops::Shape& first = node.input_shapes[0];
  const int rank = static_cast<int>(first.size());
  const int axis = node.op.axis;
  if (axis < 0 || axis >= rank) {
    return InvalidArgumentError(node.Label() + ": Concatenate's axis " + std::to_string(axis) +
                                " is not a per-example axis of its inputs (rank " + std::to_string(rank) + ")");
  }
  ops::Shape out = first;
  out[axis] = 0;
  std::vector<int64_t> chunks;
  for (const ops::Shape& s : node.input_shapes) {
    bool ok = static_cast<int>(s.size()) == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == axis || s[d] == first[d];
    if (!ok) {
      return InvalidArgumentError(node.Label() + ": Concatenate's inputs must agree on every axis but " +
                                  std::to_string(axis));
    }
    out[axis] += s[axis];
    chunks.push_back(shape::ConcatChunk(s.data(), rank, axis));
  }
  if (out != node.output_shape) {
    return InvalidArgumentError(node.Label() + ": Concatenate's output shape is not its inputs' joined along the axis");
  }
  const int64_t outer = shape::ConcatOuter(first.data(), axis);
  return std::unique_ptr<backends::Kernel>(new pool_shape::ConcatenateKernel(node, gpu, outer, std::move(chunks)));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewMultiplyKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kMultiply));
  RT_RETURN_IF_ERROR(pool_shape::NeedInputs(node, 1));
  RT_RETURN_IF_ERROR(pool_shape::NeedSameShapes(node));
  return std::unique_ptr<backends::Kernel>(new pool_shape::MultiplyKernel(node, gpu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewAddKernel(const ops::Node& node, const GpuContext* gpu) {
  RT_RETURN_IF_ERROR(pool_shape::NeedKind(node, ops::OpKind::kAdd));
  RT_RETURN_IF_ERROR(pool_shape::NeedInputs(node, 1));
  RT_RETURN_IF_ERROR(pool_shape::NeedSameShapes(node));
  const ops::Activation act = node.op.activation;
  if (act != ops::Activation::kLinear && act != ops::Activation::kRelu) {
    return UnimplementedError(node.Label() + ": Add with the activation " + ops::ActivationName(act) +
                              " (relu or linear only)");
  }
  return std::unique_ptr<backends::Kernel>(new pool_shape::AddManyKernel(node, gpu, act == ops::Activation::kRelu));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewShapeKernel(const ops::Node& node, const GpuContext* gpu) {
  switch (node.op.kind) {
    case ops::OpKind::kAvgPool2D:
      return NewAvgPoolKernel(node, gpu);
    case ops::OpKind::kGlobalMaxPool2D:
      return NewGlobalMaxPoolKernel(node, gpu);
    case ops::OpKind::kGlobalAvgPool2D:
      return NewGlobalAvgPoolKernel(node, gpu);
    case ops::OpKind::kZeroPadding2D:
      return NewZeroPaddingKernel(node, gpu);
    case ops::OpKind::kRescaling:
      return NewRescalingKernel(node, gpu);
    case ops::OpKind::kConcatenate:
      return NewConcatenateKernel(node, gpu);
    case ops::OpKind::kMultiply:
      return NewMultiplyKernel(node, gpu);
    case ops::OpKind::kAdd:
      return NewAddKernel(node, gpu);
    default:
      break;
  }
  return UnimplementedError(node.Label() + ": op " + ops::Describe(node.op) + " is not a shape or merge op");
}

}  // namespace ringtrain::gpu
