#include "engine/gpu_engine_link.h"
#include "engine/gpu_engine.h"

namespace ringtrain::engine::internal {

bool GpuEngineBuilt() { return true; }

StatusOr<std::unique_ptr<Engine>> NewGpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch,
                                               int ordinal) {
  return gpu::NewGpuEngine(model, optimizer, max_batch, ordinal);
}

}  // namespace ringtrain::engine::internal
