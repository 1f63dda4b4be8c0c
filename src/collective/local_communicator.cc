#include "collective/local_communicator.h"

#include <cstring>

namespace ringtrain::collective {

Status LocalCommunicator::CheckAborted() const {
  if (!aborted_.load()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mu_);
  return AbortedError(abort_reason_);
}

void LocalCommunicator::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.load()) return;
  abort_reason_ = reason.empty() ? "the communicator was aborted" : reason;
  aborted_.store(true);
}

Status LocalCommunicator::AllReduce(float* data, size_t count, ReduceOp op) {
  RT_RETURN_IF_ERROR(CheckAborted());
  if (data == nullptr && count > 0) return InvalidArgumentError("AllReduce: data is null but count is > 0");
  // Dividing by 1 is exact; it is still done so that NaNs come out as they would from a ring.
  if (op == ReduceOp::kMean) {
    for (size_t i = 0; i < count; ++i) data[i] /= 1.0f;
  }
  return Status::Ok();
}

Status LocalCommunicator::Broadcast(float* data, size_t count, int root) {
  RT_RETURN_IF_ERROR(CheckAborted());
  if (root != 0) {
    return InvalidArgumentError("Broadcast: root " + std::to_string(root) + " is not a rank of this job (only rank 0)");
  }
  if (data == nullptr && count > 0) return InvalidArgumentError("Broadcast: data is null but count is > 0");
  return Status::Ok();
}

Status LocalCommunicator::AllGather(const float* in, size_t count, float* out) {
  RT_RETURN_IF_ERROR(CheckAborted());
  if ((in == nullptr || out == nullptr) && count > 0) {
    return InvalidArgumentError("AllGather: in or out is null but count is > 0");
  }
  if (count > 0) std::memmove(out, in, count * sizeof(float));
  return Status::Ok();
}

Status LocalCommunicator::Barrier() { return CheckAborted(); }

}  // namespace ringtrain::collective
