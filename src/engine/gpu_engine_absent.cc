#include "engine/gpu_engine_link.h"

namespace ringtrain::engine::internal {

bool GpuEngineBuilt() { return false; }

StatusOr<std::unique_ptr<Engine>> NewGpuEngine(nn::Model*, nn::Optimizer*, int, int) {
  return FailedPreconditionError("this build of ringtrain has no GPU engine (built without CUDA and cuDNN); "
                                 "train on the CPU or rebuild with them (docs/perf/gpu.md)");
}

}  // namespace ringtrain::engine::internal
