#include "collective/local_communicator.h"

#include <cstring>

#include "collective/reduce.h"

namespace ringtrain::collective {

Status LocalCommunicator::DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  // A mean divides by 1, which is exact; it is still done (through the routine every
  // backend uses) so that NaNs come out as they would from a ring.
  if (op == ReduceOp::kMean && count > 0) {
    const void* sources[1] = {data};
    internal::ReduceInOrder(type, sources, 1, count, /*divide_by=*/1, data, nullptr);
  }
  return Status::Ok();
}

Status LocalCommunicator::DoAllGather(const void* in, size_t count, DataType type, void* out) {
  if (count > 0) std::memmove(out, in, count * DataTypeSize(type));
  return Status::Ok();
}

}  // namespace ringtrain::collective
