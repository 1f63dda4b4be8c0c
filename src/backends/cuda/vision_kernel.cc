// The CUDA kernels of backends/cuda/vision_kernels.h: thin classes over the launches of
// backends/cuda/vision_launch.h that own their output and input-gradient buffers.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/vision_kernels.h"
#include "backends/cuda/vision_launch.h"

namespace ringtrain::gpu {
// A namespace of its own: unity builds may compile this file with the other kernels.
namespace vision_kernels {
namespace {

// One input, one output: Launch's forward and backward over the kernel's buffers.
template <typename Geometry, cudaError_t (*ForwardFn)(const Geometry&, const float*, int, float*, cudaStream_t),
          cudaError_t (*BackwardFn)(const Geometry&, const float*, int, float*, cudaStream_t)>
class OneInputKernel final : public backends::Kernel {
 public:
  OneInputKernel(const ops::Node& node, const GpuContext* gpu, const Geometry& g, const char* what)
      : name_(node.name),
        gpu_(gpu),
        g_(g),
        what_(what),
        in_size_(ops::NumElements(node.input_shapes[0])),
        out_size_(node.output_size()),
        need_din_(!node.need_input_grad.empty() && node.need_input_grad[0]) {}

  Status Reserve(int batch) override {
    RT_RETURN_IF_ERROR(y_.Grow(static_cast<size_t>(batch) * out_size_, name_ + " output", gpu_->ordinal()));
    if (need_din_) {
      RT_RETURN_IF_ERROR(dx_.Grow(static_cast<size_t>(batch) * in_size_, name_ + " input gradient", gpu_->ordinal()));
    }
    return Status::Ok();
  }
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int batch,
                                 bool training) override {
    RT_RETURN_IF_ERROR(Check(ForwardFn(g_, in[0], batch, y_.get(), gpu_->compute()), "Forward"));
    if (training) batch_ = batch;
    return static_cast<const float*>(y_.get());
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (!need[0]) return Status::Ok();
    if (batch_ <= 0) return FailedPreconditionError(name_ + ": Backward without a training Forward");
    if (dx_.get() == nullptr) {
      return InternalError(name_ + ": the input gradient asked for, but the kernel was built without one");
    }
    RT_RETURN_IF_ERROR(Check(BackwardFn(g_, dy, batch_, dx_.get(), gpu_->compute()), "Backward"));
    (*din)[0] = dx_.get();
    return Status::Ok();
  }

 private:
  Status Check(cudaError_t e, const char* pass) const {
    return CudaCheck(e, std::string(what_) + pass + "(" + name_ + ")", gpu_->ordinal());
  }

  const std::string name_;
  const GpuContext* gpu_;
  const Geometry g_;
  const char* what_;
  const int64_t in_size_, out_size_;
  const bool need_din_;
  int batch_ = 0;
  DeviceBuffer<float> y_, dx_;
};

using ResampleKernel = OneInputKernel<vision::ResampleGeometry, ResampleForward, ResampleBackward>;
using PermuteKernel = OneInputKernel<vision::PermuteGeometry, PermuteForward, PermuteBackward>;
using ReduceKernel = OneInputKernel<vision::ReduceGeometry, ReduceForward, ReduceBackward>;

}  // namespace
}  // namespace vision_kernels

StatusOr<std::unique_ptr<backends::Kernel>> NewResampleKernel(const ops::Node& node, const GpuContext* gpu) {
  const ops::Op& op = node.op;
  if (node.input_shapes.size() != 1 || node.input_shapes[0].size() != 3 || node.output_shape.size() != 3 ||
      node.output_shape[2] != node.input_shapes[0][2]) {
    return InvalidArgumentError(node.Label() + ": resampling needs one [h, w, c] input and an output of its channels");
  }
  const ops::Shape& in = node.input_shapes[0];
  const ops::Shape& out = node.output_shape;
  vision::ResampleGeometry g;
  g.in_h = in[0];
  g.in_w = in[1];
  g.c = in[2];
  g.out_h = out[0];
  g.out_w = out[1];
  g.box_h = in[0];
  g.box_w = in[1];
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
    case ops::OpKind::kUpSampling2D:
      break;
    default:
      return InvalidArgumentError(node.Label() + ": op " + ops::Describe(op) + " is not a resampling op");
  }
  if (g.top < 0 || g.left < 0 || g.box_h < 1 || g.box_w < 1 || g.top + g.box_h > g.in_h ||
      g.left + g.box_w > g.in_w || g.out_h < 1 || g.out_w < 1) {
    return InvalidArgumentError(node.Label() + ": the resampled box does not fit the node's input");
  }
  if (g.box_h != g.out_h || g.box_w != g.out_w) {
    g.mode = op.interpolation == ops::Op::Interpolation::kNearest ? vision::kNearest : vision::kBilinear;
  }
  return std::unique_ptr<backends::Kernel>(new vision_kernels::ResampleKernel(node, gpu, g, "Resample"));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewPermuteKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kPermute || node.input_shapes.size() != 1) {
    return InvalidArgumentError(node.Label() + ": not a Permute op (" + ops::Describe(node.op) + ")");
  }
  const ops::Shape& in = node.input_shapes[0];
  const std::vector<int>& perm = node.op.permutation;
  const int rank = static_cast<int>(in.size());
  if (rank < 1 || rank > vision::kMaxRank || static_cast<int>(perm.size()) != rank) {
    return InvalidArgumentError(node.Label() + ": Permute runs ranks 1 to " + std::to_string(vision::kMaxRank) +
                                " with one entry per axis");
  }
  std::vector<int64_t> in_strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in[d + 1];
  vision::PermuteGeometry p;
  p.rank = rank;
  p.size = ops::NumElements(in);
  std::vector<bool> seen(rank, false);
  for (int d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank || seen[perm[d]] || node.output_shape.size() != in.size() ||
        node.output_shape[d] != in[perm[d]]) {
      return InvalidArgumentError(node.Label() + ": the permutation does not fit the node's shapes");
    }
    seen[perm[d]] = true;
    p.out_shape[d] = in[perm[d]];
    p.stride[d] = in_strides[perm[d]];
  }
  return std::unique_ptr<backends::Kernel>(new vision_kernels::PermuteKernel(node, gpu, p, "Permute"));
}

StatusOr<std::unique_ptr<backends::Kernel>> NewReduceKernel(const ops::Node& node, const GpuContext* gpu) {
  if (node.op.kind != ops::OpKind::kReduce || node.input_shapes.size() != 1) {
    return InvalidArgumentError(node.Label() + ": not a Reduce op (" + ops::Describe(node.op) + ")");
  }
  const ops::Shape& in = node.input_shapes[0];
  const int rank = static_cast<int>(in.size());
  if (rank < 1 || rank > vision::kMaxRank) {
    return InvalidArgumentError(node.Label() + ": Reduce runs ranks 1 to " + std::to_string(vision::kMaxRank));
  }
  const std::vector<int>& axes = node.op.reduce_axes;
  for (int a : axes) {
    if (a < 0 || a >= rank) return InvalidArgumentError(node.Label() + ": a reduced axis is not an axis of the input");
  }
  const vision::ReduceGeometry g = vision::ReduceGeometryOf(in.data(), rank, axes.data(), static_cast<int>(axes.size()),
                                                            node.op.reduce_mean);
  if (g.out_size != node.output_size()) {
    return InvalidArgumentError(node.Label() + ": the reduced axes do not fit the node's shapes");
  }
  return std::unique_ptr<backends::Kernel>(new vision_kernels::ReduceKernel(node, gpu, g, "Reduce"));
}

}  // namespace ringtrain::gpu
