// The memory bound (RINGTRAIN_MAX_MEMORY_MB, config/settings.h) and the one check
// against it, shared by training, `bench train`, `evaluate` and `predict`: what a job
// would need is added up from its parts before anything large is allocated, and a job
// over the bound is refused with one line naming the largest part, the field that
// makes it large, the bound and where the bound comes from:
//
//   batch_size_per_worker 1000000000 would need about 2.8 TiB for activations (2.8 TiB
//   in all); the bound is 23.4 GiB (RINGTRAIN_MAX_MEMORY_MB, default: this machine's
//   physical memory); lower batch_size_per_worker
//
// Sizes are added with saturating arithmetic, so absurd fields cannot wrap around to
// a small total. Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();
inline uint64_t SatAdd(uint64_t a, uint64_t b) { return a > kSaturated - b ? kSaturated : a + b; }
inline uint64_t SatMul(uint64_t a, uint64_t b) { return (b != 0 && a > kSaturated / b) ? kSaturated : a * b; }

struct MemoryBound {
  uint64_t bytes = 0;             // 0: no bound
  bool from_environment = false;  // RINGTRAIN_MAX_MEMORY_MB was set
  // "23.4 GiB (RINGTRAIN_MAX_MEMORY_MB, default: this machine's physical memory)".
  std::string Describe() const;
};

// One part of what a job needs.
struct MemoryUse {
  std::string what;    // "activations", "weights, gradients and optimizer state", "data.train as loaded"
  uint64_t bytes = 0;
  std::string cause;   // what makes it large: "batch_size_per_worker 1000000000"
  std::string remedy;  // "lower batch_size_per_worker"
};

// OK when the uses add up to at most the bound (or there is no bound). Otherwise
// RESOURCE_EXHAUSTED about Subject::kConfig (exit 2: the job's fault), naming the
// largest use as above. `workers` > 1 multiplies everything: that many processes
// on this machine (`bench train --workers N`), said in the message.
Status CheckMemory(const std::vector<MemoryUse>& uses, const MemoryBound& bound, int workers = 1);

}  // namespace ringtrain
