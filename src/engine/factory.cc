#include "engine/factory.h"

#include "engine/gpu_engine_link.h"

namespace ringtrain::engine {

EngineFactory FactoryFor(const EngineSpec& spec) {
  if (spec.gpu < 0) {
    return [](nn::Model* model, nn::Optimizer* optimizer, int max_batch) -> StatusOr<std::unique_ptr<Engine>> {
      return NewCpuEngine(model, optimizer, max_batch);
    };
  }
  const int ordinal = spec.gpu;
  return [ordinal](nn::Model* model, nn::Optimizer* optimizer, int max_batch) {
    return internal::NewGpuEngine(model, optimizer, max_batch, ordinal);
  };
}

bool GpuEngineBuilt() { return internal::GpuEngineBuilt(); }

}  // namespace ringtrain::engine
