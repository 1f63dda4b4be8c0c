// The CPU backend: host memory and the AVX-512 / OpenBLAS kernels of kernels/. It runs
// every op (CpuDeclaredSupport); its kernels (backends/cpu/cpu_kernel.h) are made from
// the node alone, for every op kind.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/backend.h"
#include "ops/graph.h"

namespace ringtrain::backends {

std::unique_ptr<Backend> NewCpuBackend();

// For the memory check (nn/model_memory.h) of an op without a cost model of its own
// there: the floats per example the CPU kernel of `node` keeps besides its output and its
// input gradients (pre-activation copies, masks, kernel scratch), with the backward
// pass's needs when `training`. An upper bound; 0 when it keeps nothing that grows with
// the batch. Reads the node's op and shapes only.
uint64_t CpuScratchFloatsPerExample(const ops::Node& node, bool training);

}  // namespace ringtrain::backends
