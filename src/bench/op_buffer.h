// Where the benchmark's all-reduce operates: host memory for the CPU backends, device
// memory for NCCL (whose communicators take device pointers). The benchmark fills and
// checks a host copy; CopyIn/CopyOut move it, outside the timed region.
// Threading: one thread at a time. Owns its memory; the destructor frees it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/status.h"

namespace ringtrain::bench {

class OpBuffer {
 public:
  virtual ~OpBuffer() = default;
  // `count` floats the collective operates on; stays valid for the buffer's life.
  virtual float* data() = 0;
  virtual size_t count() const = 0;
  // The host copy the benchmark fills before each operation and checks after it.
  virtual float* host() = 0;
  // The first n floats of host() -> data() and back (n <= count()). No-ops where
  // data() is host().
  virtual Status CopyIn(size_t n) = 0;
  virtual Status CopyOut(size_t n) = 0;
};

// Host memory: data() == host().
std::unique_ptr<OpBuffer> AllocateHostBuffer(size_t count);
// Device memory on the calling thread's current CUDA device. UNIMPLEMENTED in a build
// without CUDA; INTERNAL (naming the CUDA error) if the allocation fails.
StatusOr<std::unique_ptr<OpBuffer>> AllocateDeviceBuffer(size_t count);

}  // namespace ringtrain::bench
