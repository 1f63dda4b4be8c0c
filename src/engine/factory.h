// Chooses the engine a worker trains on: the library that owns the Engine interface
// also owns the choice, so callers (worker/, tests) never ask which backends this build
// has. The trainer takes the choice as an EngineFactory (engine.h) and so depends on
// no backend.
//
// Target ringtrain_engine_factory: links the GPU engine when CMake found CUDA and cuDNN
// (gpu_engine_present.cc), else gpu_engine_absent.cc says why there is none.
#pragma once

#include "engine/engine.h"

namespace ringtrain::engine {

// Where an engine runs: the CPU, or CUDA device `gpu` (as numbered under
// CUDA_VISIBLE_DEVICES; device::Place decides it).
struct EngineSpec {
  int gpu = -1;  // -1: the CPU
};

// The factory for `spec`. Its engines fail with FAILED_PRECONDITION (naming the CUDA
// error) when the GPU cannot be used, or when this build has no GPU engine (saying
// how to get one). Never fails for the CPU.
EngineFactory FactoryFor(const EngineSpec& spec);

// Whether this build has the GPU engine.
bool GpuEngineBuilt();

}  // namespace ringtrain::engine
