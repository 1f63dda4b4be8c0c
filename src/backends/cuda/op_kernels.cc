#include "backends/cuda/op_kernels.h"

#include "backends/cuda/activation_kernel.h"
#include "backends/cuda/conv_family.h"
#include "backends/cuda/merge_kernels.h"
#include "backends/cuda/normalization_kernel.h"
#include "backends/cuda/noise_kernel.h"
#include "backends/cuda/image_adjust_kernel.h"
#include "backends/cuda/zoom_kernel.h"
#include "backends/cuda/norm_kernels.h"
#include "backends/cuda/random_kernels.h"
#include "backends/cuda/shape_kernels.h"
#include "backends/cuda/conv_transpose_kernel.h"
#include "backends/cuda/vision_kernels.h"

namespace ringtrain::gpu {
namespace {

// reshape / flatten: the same bytes under another shape.
class ViewKernel final : public backends::Kernel {
 public:
  StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int,
                                 bool) override {
    return in[0];
  }
  Status Backward(const backends::KernelArgs&, const float* dy, const std::vector<bool>& need,
                  std::vector<const float*>* din) override {
    if (need[0]) (*din)[0] = dy;
    return Status::Ok();
  }
};

}  // namespace

NodeDesc NodeDesc::From(const ops::Node& node) {
  NodeDesc d;
  d.name = node.name;
  d.window = node.op.window;
  d.units = node.op.units;
  d.relu = node.op.activation == ops::Activation::kRelu;
  d.use_bias = node.op.use_bias;
  if (!node.params.empty()) {
    d.kernel_offset = node.params[0].offset;
    d.kernel_trainable = node.params[0].trainable;
  }
  if (node.params.size() > 1) {
    d.bias_offset = node.params[1].offset;
    d.bias_trainable = node.params[1].trainable;
  }
  d.need_input_grad = !node.need_input_grad.empty() && node.need_input_grad[0];
  d.input_shape = node.input_shapes.empty() ? std::vector<int>{} : node.input_shapes[0];
  return d;
}

StatusOr<std::unique_ptr<backends::Kernel>> NewCudaKernel(const ops::Node& node, const GpuContext* gpu) {
  switch (node.op.kind) {
    case ops::OpKind::kView:
      return std::unique_ptr<backends::Kernel>(new ViewKernel());
    case ops::OpKind::kConv2D:
      return NewConv2DKernel(node, gpu);
    case ops::OpKind::kDepthwiseConv2D:
      return NewDepthwiseConv2DKernel(node, gpu);
    case ops::OpKind::kSeparableConv2D:
      return NewSeparableConv2DKernel(node, gpu);
    case ops::OpKind::kDense:
      return NewDenseKernelForNode(node, gpu);
    case ops::OpKind::kMaxPool2D:
      return NewMaxPoolKernel(NodeDesc::From(node), gpu);
    case ops::OpKind::kBatchNorm:
      return NewBatchNormKernel(node, gpu);
    case ops::OpKind::kLayerNorm:
      return NewLayerNormKernel(node, gpu);
    case ops::OpKind::kActivation:
      return NewActivationKernel(node, gpu);
    case ops::OpKind::kAdd:
      return NewAddKernel(node, gpu);
    case ops::OpKind::kAvgPool2D:
    case ops::OpKind::kGlobalMaxPool2D:
    case ops::OpKind::kGlobalAvgPool2D:
    case ops::OpKind::kZeroPadding2D:
    case ops::OpKind::kRescaling:
    case ops::OpKind::kConcatenate:
    case ops::OpKind::kMultiply:
      return NewShapeKernel(node, gpu);
    case ops::OpKind::kDropout:
      return NewDropoutKernel(node, gpu);
    case ops::OpKind::kRandomFlip:
      return NewRandomFlipKernel(node, gpu);
    case ops::OpKind::kRandomCrop:
      return NewRandomCropKernel(node, gpu);
    case ops::OpKind::kRandomRotation:
    case ops::OpKind::kRandomTranslation:
      return NewRandomAffineKernel(node, gpu);
    case ops::OpKind::kCropping2D:
    case ops::OpKind::kUpSampling2D:
    case ops::OpKind::kResizing:
    case ops::OpKind::kCenterCrop:
      return NewResampleKernel(node, gpu);
    case ops::OpKind::kConv2DTranspose:
      return NewConvTransposeKernel(node, gpu);
    case ops::OpKind::kPermute:
      return NewPermuteKernel(node, gpu);
    case ops::OpKind::kSubtract:
    case ops::OpKind::kAverage:
    case ops::OpKind::kMaximum:
    case ops::OpKind::kMinimum:
      return NewElementwiseMergeKernel(node, gpu);
    case ops::OpKind::kNormalization:
      return NewNormalizationKernel(node, gpu);
    case ops::OpKind::kSpatialDropout2D:
    case ops::OpKind::kGaussianNoise:
      return NewNoiseKernel(node, gpu);
    case ops::OpKind::kRandomBrightness:
    case ops::OpKind::kRandomContrast:
      return NewImageAdjustKernel(node, gpu);
    case ops::OpKind::kRandomZoom:
      return NewRandomZoomKernel(node, gpu);
    case ops::OpKind::kReduce:
      return NewReduceKernel(node, gpu);
  }
  return UnimplementedError(node.Label() + ": no CUDA kernel for op " + ops::Describe(node.op));
}

}  // namespace ringtrain::gpu
