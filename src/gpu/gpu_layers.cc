#include "gpu/gpu_layers.h"

namespace ringtrain::gpu {
namespace {

// reshape / flatten: the same bytes under another shape.
class GpuView final : public GpuLayer {
 public:
  Status Reserve(int) override { return Status::Ok(); }
  StatusOr<const float*> Forward(const LayerArgs&, const float* x, int, bool) override { return x; }
  StatusOr<const float*> Backward(const LayerArgs&, const float* dy, bool need_din) override {
    return need_din ? dy : static_cast<const float*>(nullptr);
  }
};

}  // namespace

std::unique_ptr<GpuLayer> NewGpuView() { return std::make_unique<GpuView>(); }

StatusOr<std::unique_ptr<GpuLayer>> NewGpuLayer(const nn::LayerDesc& desc, const GpuContext* gpu) {
  switch (desc.kind) {
    case nn::LayerDesc::Kind::kView:
      return NewGpuView();
    case nn::LayerDesc::Kind::kConv2D:
      return NewGpuConv(desc, gpu);
    case nn::LayerDesc::Kind::kDense:
      return NewGpuDense(desc, gpu);
    case nn::LayerDesc::Kind::kMaxPool2D:
      return NewGpuMaxPool(desc, gpu);
    case nn::LayerDesc::Kind::kOther:
      break;
  }
  return UnimplementedError("layer '" + desc.name + "' (" + desc.class_name +
                            ") does not run on the GPU engine yet (it runs Conv2D, MaxPooling2D, Dense, Flatten and "
                            "Reshape); set the job's \"device\" to \"cpu\"");
}

}  // namespace ringtrain::gpu
