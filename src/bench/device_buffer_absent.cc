// Device buffers in a build without the NCCL backend: no backend takes device
// pointers then, so the benchmark never asks; this says why if it does.
#include "bench/op_buffer.h"

namespace ringtrain::bench {

StatusOr<std::unique_ptr<OpBuffer>> AllocateDeviceBuffer(size_t) {
  return UnimplementedError("this build of ringtrain has no CUDA, so the benchmark cannot allocate GPU memory; "
                            "use --backend ring or tcp");
}

}  // namespace ringtrain::bench
