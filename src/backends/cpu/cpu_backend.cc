#include "backends/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/cpu_kernel.h"
#include "kernels/elementwise.h"
#include "kernels/kernels.h"

namespace ringtrain::backends {
namespace {

void FreeHost(void* ptr) noexcept { std::free(ptr); }

// The kernel of `node` (null only for a kind outside ops::OpKind).
std::unique_ptr<cpu::CpuKernel> NewCpuKernel(const ops::Node& node) {
  switch (node.op.kind) {
    case ops::OpKind::kView: return cpu::NewViewKernel(node);
    case ops::OpKind::kDense: return cpu::NewDenseKernel(node);
    case ops::OpKind::kConv2D: return cpu::NewConv2DKernel(node);
    case ops::OpKind::kDepthwiseConv2D: return cpu::NewDepthwiseConv2DKernel(node);
    case ops::OpKind::kSeparableConv2D: return cpu::NewSeparableConv2DKernel(node);
    case ops::OpKind::kMaxPool2D: return cpu::NewMaxPool2DKernel(node);
    case ops::OpKind::kAvgPool2D: return cpu::NewAvgPool2DKernel(node);
    case ops::OpKind::kGlobalMaxPool2D:
    case ops::OpKind::kGlobalAvgPool2D: return cpu::NewGlobalPool2DKernel(node);
    case ops::OpKind::kBatchNorm: return cpu::NewBatchNormKernel(node);
    case ops::OpKind::kLayerNorm: return cpu::NewLayerNormKernel(node);
    case ops::OpKind::kActivation: return cpu::NewActivationKernel(node);
    case ops::OpKind::kAdd:
    case ops::OpKind::kMultiply:
    case ops::OpKind::kConcatenate: return cpu::NewMergeKernel(node);
    case ops::OpKind::kZeroPadding2D: return cpu::NewZeroPadding2DKernel(node);
    case ops::OpKind::kRescaling: return cpu::NewRescalingKernel(node);
    case ops::OpKind::kDropout: return cpu::NewDropoutKernel(node);
    case ops::OpKind::kRandomFlip: return cpu::NewRandomFlipKernel(node);
    case ops::OpKind::kRandomCrop: return cpu::NewRandomCropKernel(node);
    case ops::OpKind::kRandomRotation:
    case ops::OpKind::kRandomTranslation: return cpu::NewRandomAffineKernel(node);
    case ops::OpKind::kCropping2D: return cpu::NewResampleKernel(node);
    case ops::OpKind::kUpSampling2D: return cpu::NewResampleKernel(node);
    case ops::OpKind::kConv2DTranspose: return cpu::NewConvTransposeKernel(node);
    case ops::OpKind::kPermute: return cpu::NewPermuteKernel(node);
    case ops::OpKind::kResizing: return cpu::NewResampleKernel(node);
    case ops::OpKind::kCenterCrop: return cpu::NewResampleKernel(node);
    case ops::OpKind::kSubtract: return cpu::NewMergeKernel(node);
    case ops::OpKind::kAverage: return cpu::NewMergeKernel(node);
    case ops::OpKind::kMaximum: return cpu::NewMergeKernel(node);
    case ops::OpKind::kMinimum: return cpu::NewMergeKernel(node);
    case ops::OpKind::kNormalization: return cpu::NewNormalizationKernel(node);
    case ops::OpKind::kSpatialDropout2D: return cpu::NewSpatialDropout2DKernel(node);
    case ops::OpKind::kGaussianNoise: return cpu::NewGaussianNoiseKernel(node);
    case ops::OpKind::kRandomBrightness: return cpu::NewImageAdjustKernel(node);
    case ops::OpKind::kRandomContrast: return cpu::NewImageAdjustKernel(node);
    case ops::OpKind::kRandomZoom: return cpu::NewRandomZoomKernel(node);
    case ops::OpKind::kReduce: return cpu::NewReduceKernel(node);
  }
  return nullptr;
}

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::kCpu; }
  std::string Describe() const override {
    return std::string("CPU (") + kernels::Implementation() + " kernels, " + std::to_string(kernels::NumThreads()) +
           " thread" + (kernels::NumThreads() == 1 ? "" : "s") + ")";
  }
  Status Supports(const ops::Op&) const override { return Status::Ok(); }
  bool CanFuse(Fusion fusion, const ops::Op& producer) const override {
    switch (fusion) {
      case Fusion::kReluIntoProducer:
        return producer.kind == ops::OpKind::kBatchNorm || producer.kind == ops::OpKind::kAdd;
      case Fusion::kProducerIntoAdd:
        return producer.kind == ops::OpKind::kBatchNorm;
    }
    return false;
  }
  StatusOr<std::unique_ptr<Kernel>> NewKernel(const ops::Node& node) override {
    std::unique_ptr<cpu::CpuKernel> kernel = NewCpuKernel(node);
    if (kernel == nullptr) {
      return InternalError(node.Label() + ": no CPU kernel for op kind " +
                           std::to_string(static_cast<int>(node.op.kind)));
    }
    return std::unique_ptr<Kernel>(std::move(kernel));
  }
  StatusOr<Buffer> Allocate(size_t bytes, const std::string& what) override {
    if (bytes == 0) return Buffer();
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p == nullptr) return ResourceExhaustedError("out of host memory for " + what + " (" + std::to_string(bytes) + " bytes)");
    return Buffer(p, bytes, &FreeHost);
  }
  Status Copy(void* dst, const void* src, size_t bytes, Direction) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status Synchronize(const std::string&) override { return Status::Ok(); }  // the CPU runs each call to its end
  Status AddArrays(const float* a, const float* b, const float* relu_mask, size_t n, float* out) override {
    if (relu_mask != nullptr) {
      kernels::AddArraysMasked(a, b, relu_mask, n, out);
    } else {
      kernels::AddArrays(a, b, n, /*relu=*/false, out);
    }
    return Status::Ok();
  }
  Status Accumulate(float* acc, const float* x, size_t n) override {
    kernels::AccumulateArray(acc, x, n);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Backend> NewCpuBackend() { return std::make_unique<CpuBackend>(); }

uint64_t CpuScratchFloatsPerExample(const ops::Node& node, bool training) {
  switch (node.op.kind) {
    case ops::OpKind::kDense: return cpu::DenseScratchFloatsPerExample(node, training);
    case ops::OpKind::kConv2D: return cpu::Conv2DScratchFloatsPerExample(node, training);
    case ops::OpKind::kDepthwiseConv2D: return cpu::DepthwiseConv2DScratchFloatsPerExample(node, training);
    case ops::OpKind::kSeparableConv2D: return cpu::SeparableConv2DScratchFloatsPerExample(node, training);
    case ops::OpKind::kDropout: return cpu::DropoutScratchFloatsPerExample(node, training);
    case ops::OpKind::kConv2DTranspose: return cpu::ConvTransposeScratchFloatsPerExample(node, training);
    case ops::OpKind::kRandomBrightness:  // the values before the clip
    case ops::OpKind::kRandomContrast: return training ? static_cast<uint64_t>(cpu::InputSize(node)) : 0;
    default: return 0;
  }
}

}  // namespace ringtrain::backends
