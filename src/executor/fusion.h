// The executor's fusion pass: rewrites which kernel does which pass over memory, asking
// the backend what it can fuse (backends::Backend::CanFuse), with the bits of the
// unfused graph.
//   kReluIntoProducer  a plain relu whose input feeds nothing else runs inside the node
//                      before it (BatchNorm, Add on the CPU); the relu node passes through.
//   kProducerIntoAdd   a node whose output feeds nothing but an Add of two inputs is
//                      computed inside the Add's pass.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "ops/graph.h"

namespace ringtrain::executor::internal {

// Applies the fusions through the kernels' hooks (backends/kernel.h). Returns, per node,
// the node whose kernel took over the relu producing its output, or -1.
std::vector<int> FuseForBackend(const ops::Graph& graph, const backends::Backend& backend,
                                const std::vector<std::unique_ptr<backends::Kernel>>& kernels);

// A relu with nothing but its default arguments (Keras' ReLU() or Activation("relu")).
bool IsPlainRelu(const ops::Node& node);

}  // namespace ringtrain::executor::internal
