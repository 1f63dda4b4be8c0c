// The CPU backend's kernels (backends/kernel.h), built from an ops::Node alone, one
// file per op family:
//   conv2d_kernel.cc       Conv2D (kernels::Conv* or, with dilation or groups, kernels::GroupedConv*)
//   depthwise_kernels.cc   DepthwiseConv2D, SeparableConv2D
//   dense_kernel.cc        Dense
//   pool_kernels.cc        MaxPool2D, AvgPool2D, GlobalMaxPool2D, GlobalAvgPool2D
//   batch_norm_kernel.cc   BatchNorm (training, inference, synchronized)
//   layer_norm_kernel.cc   LayerNorm
//   activation_kernel.cc   Activation (Activation, ReLU, LeakyReLU, Softmax layers)
//   merge_kernels.cc       Add, Multiply, Concatenate, Subtract, Average, Maximum, Minimum
//   shape_kernels.cc       ZeroPadding2D, Rescaling, views (Reshape, Flatten)
//   dropout_kernel.cc      Dropout
//   augment_kernels.cc     RandomFlip, RandomCrop, RandomTranslation, RandomRotation
//   normalization_kernel.cc  Normalization
//   noise_kernels.cc       SpatialDropout2D, GaussianNoise (draws: noise_draws.h)
//   image_adjust_kernels.cc  RandomBrightness, RandomContrast
//   random_zoom_kernel.cc  RandomZoom (image_transform.h's sampler)
// with the helpers image_transform.h (TF's projective sampling, for the last two) and
// augment_draws.h (the counter-based random draws of Dropout and the augmentation ops).
// A kernel reads its weights at args.params + node.params[k].offset and writes their
// gradients at args.grads + the same offset (trainable weights only) on each call; its
// reduced statistics at args.grads + node.first_stat.
//
// Memory: each kernel owns its output, input-gradient and scratch buffers, grown to the
// largest batch it has run (nothing is allocated after the first call with a batch size).
// Threading: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/kernel.h"
#include "ops/graph.h"

namespace ringtrain::backends::cpu {

// Every CPU kernel: the executor pairs kernels of one backend, so a CPU Add's deferred
// producer (Kernel::TakeDeferredInput) is a CpuKernel.
class CpuKernel : public Kernel {
 public:
  // kProducerIntoAdd: after DeferToAdd, the kernel's Forward returns null and the Add it
  // feeds calls this, which writes out = this kernel's output + other (relu'd when asked)
  // in one pass, with the bits of the two passes. The kernel's Backward is unchanged (it
  // must not need its own output).
  virtual void AddOutputTo(const float* other, bool relu, float* out) const {}
};

// A kernel of one input: Forward of in[0], Backward of its gradient alone.
class OneInputKernel : public CpuKernel {
 public:
  StatusOr<const float*> Forward(const KernelArgs& args, const std::vector<const float*>& in, int batch,
                                 bool training) final {
    return ForwardOne(args, in[0], batch, training);
  }
  Status Backward(const KernelArgs& args, const float* dout, const std::vector<bool>& need_din,
                  std::vector<const float*>* din) final {
    (*din)[0] = BackwardOne(args, dout, need_din[0]);
    return Status::Ok();
  }

 protected:
  // in: [batch, input shape]. Returns [batch, output shape]; with `training`, `in` stays
  // valid until Backward.
  virtual const float* ForwardOne(const KernelArgs& args, const float* in, int batch, bool training) = 0;
  // For the last training Forward: overwrites the trainable weights' gradients; returns
  // the input gradient when `need_din`, otherwise null.
  virtual const float* BackwardOne(const KernelArgs& args, const float* dout, bool need_din) = 0;
};

// Grows `buf` to at least n elements; never shrinks, so steady-state calls do not allocate.
template <typename T>
inline T* EnsureSize(std::vector<T>& buf, size_t n) {
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// Weight k of `node` in the model's buffers, and its gradient (null when the weight is
// not trainable: a frozen layer's, a moving statistic).
inline const float* Param(const KernelArgs& args, const ops::Node& node, size_t k) {
  return args.params + node.params[k].offset;
}
inline float* Grad(const KernelArgs& args, const ops::Node& node, size_t k) {
  return node.params[k].trainable ? args.grads + node.params[k].offset : nullptr;
}
// Floats per example of input k.
inline int64_t InputSize(const ops::Node& node, size_t k = 0) { return ops::NumElements(node.input_shapes[k]); }
// The step a training Forward that draws random numbers runs in (Dropout, augmentation),
// or INTERNAL naming the node (`label`: ops::Node::Label) when the caller gave none.
inline StatusOr<const StepContext*> TrainingStep(const KernelArgs& args, const std::string& label) {
  if (args.step == nullptr) {
    return InternalError(label + ": a training Forward needs the step context (KernelArgs::step) for its draws");
  }
  return args.step;
}

// The per-family factories behind CpuBackend::NewKernel (cpu_backend.cc); `node`'s op is
// of the family's kinds.
std::unique_ptr<CpuKernel> NewConv2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewDepthwiseConv2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewSeparableConv2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewDenseKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewMaxPool2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewAvgPool2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewGlobalPool2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewBatchNormKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewLayerNormKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewActivationKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewMergeKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewZeroPadding2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewRescalingKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewViewKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewDropoutKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewRandomFlipKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewRandomCropKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewRandomAffineKernel(const ops::Node& node);  // kRandomTranslation, kRandomRotation
// resample_kernels.cc: kCropping2D, kUpSampling2D, kResizing, kCenterCrop
std::unique_ptr<CpuKernel> NewResampleKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewPermuteKernel(const ops::Node& node);   // permute_kernel.cc
std::unique_ptr<CpuKernel> NewReduceKernel(const ops::Node& node);    // reduce_kernel.cc
std::unique_ptr<CpuKernel> NewConvTransposeKernel(const ops::Node& node);  // conv_transpose_kernel.cc: kConv2DTranspose
std::unique_ptr<CpuKernel> NewNormalizationKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewSpatialDropout2DKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewGaussianNoiseKernel(const ops::Node& node);
std::unique_ptr<CpuKernel> NewImageAdjustKernel(const ops::Node& node);  // kRandomBrightness, kRandomContrast
std::unique_ptr<CpuKernel> NewRandomZoomKernel(const ops::Node& node);

// The floats per example a family's kernel keeps besides its output and input gradients
// (backends::CpuScratchFloatsPerExample); the families not listed keep none.
uint64_t Conv2DScratchFloatsPerExample(const ops::Node& node, bool training);
uint64_t DepthwiseConv2DScratchFloatsPerExample(const ops::Node& node, bool training);
uint64_t SeparableConv2DScratchFloatsPerExample(const ops::Node& node, bool training);
uint64_t DenseScratchFloatsPerExample(const ops::Node& node, bool training);
uint64_t DropoutScratchFloatsPerExample(const ops::Node& node, bool training);
uint64_t ConvTransposeScratchFloatsPerExample(const ops::Node& node, bool training);

}  // namespace ringtrain::backends::cpu
