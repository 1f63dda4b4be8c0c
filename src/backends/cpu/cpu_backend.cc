#include "backends/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/elementwise.h"
#include "kernels/kernels.h"

namespace ringtrain::backends {
namespace {

void FreeHost(void* ptr) noexcept { std::free(ptr); }

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
    return UnimplementedError(node.Label() + ": the CPU backend's kernels are the layers' own passes; build the " +
                              "executor with the model's kernel factory");
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

}  // namespace ringtrain::backends
