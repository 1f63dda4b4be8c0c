// The GPU engine as the factory sees it: gpu_engine_present.cc forwards to gpu/ (a
// build with CUDA and cuDNN), gpu_engine_absent.cc answers for a build without.
// Internal to ringtrain_engine_factory.
#pragma once

#include <memory>

#include "engine/engine.h"

namespace ringtrain::engine::internal {

bool GpuEngineBuilt();
StatusOr<std::unique_ptr<Engine>> NewGpuEngine(nn::Model* model, nn::Optimizer* optimizer, int max_batch,
                                               int ordinal);

}  // namespace ringtrain::engine::internal
