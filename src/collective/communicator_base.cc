#include "collective/communicator_base.h"

#include <limits>

namespace ringtrain::collective {
namespace {

Status CheckType(const char* op, DataType type) {
  if (IsKnownDataType(type)) return Status::Ok();
  return InvalidArgumentError(std::string(op) + ": unknown data type " + std::to_string(static_cast<int>(type)) +
                              "; collectives move float32, float64, int32, int64 or uint8");
}

// count elements of `type`, `blocks` times over, must be addressable.
Status CheckBytes(const char* op, size_t count, DataType type, size_t blocks, const char* what) {
  const size_t limit = std::numeric_limits<size_t>::max() / DataTypeSize(type) / blocks;
  if (count <= limit) return Status::Ok();
  return InvalidArgumentError(std::string(op) + ": " + std::to_string(count) + " " + DataTypeName(type) +
                              " elements" + what + " are more bytes than memory can address; split the collective");
}

Status CheckPointer(const char* op, const char* name, const void* p, size_t count) {
  if (p != nullptr || count == 0) return Status::Ok();
  return InvalidArgumentError(std::string(op) + ": " + name + " is null but count is " + std::to_string(count) +
                              " (> 0)");
}

}  // namespace

bool AbortSignal::Set(const std::string& reason) {
  std::lock_guard<std::mutex> lock(set_mu_);
  if (set_.load(std::memory_order_relaxed)) return false;
  reason_ = reason.empty() ? "the communicator was aborted" : reason;
  set_.store(true, std::memory_order_release);
  return true;
}

Status CommunicatorBase::Usable() const {
  if (aborted()) return AbortStatus();
  return broken_;
}

Status CommunicatorBase::Finish(const Status& status) {
  if (status.ok()) return status;
  if (!broken_.ok()) return broken_;  // a backend reporting again what broke it
  broken_ = aborted() ? AbortStatus() : status;
  OnBroken(broken_);
  return broken_;
}

void CommunicatorBase::Abort(const std::string& reason) {
  if (abort_.Set(reason)) OnAbort();
}

Status CommunicatorBase::AllReduce(void* data, size_t count, DataType type, ReduceOp op) {
  RT_RETURN_IF_ERROR(Usable());
  RT_RETURN_IF_ERROR(CheckType("AllReduce", type));
  if (op != ReduceOp::kSum && op != ReduceOp::kMean) {
    return InvalidArgumentError("AllReduce: unknown reduction " + std::to_string(static_cast<int>(op)) +
                                "; use kSum or kMean");
  }
  if (op == ReduceOp::kMean && !IsFloatingPoint(type)) {
    return InvalidArgumentError(std::string("AllReduce: kMean is not defined for ") + DataTypeName(type) +
                                " (an integer mean would have to round); use kSum and divide, or a float type");
  }
  RT_RETURN_IF_ERROR(CheckPointer("AllReduce", "data", data, count));
  RT_RETURN_IF_ERROR(CheckBytes("AllReduce", count, type, 1, ""));
  return Finish(DoAllReduce(data, count, type, op));
}

Status CommunicatorBase::Broadcast(void* data, size_t count, DataType type, int root) {
  RT_RETURN_IF_ERROR(Usable());
  RT_RETURN_IF_ERROR(CheckType("Broadcast", type));
  if (root < 0 || root >= size_) {
    return InvalidArgumentError("Broadcast: root " + std::to_string(root) + " is not a rank of this communicator (0.." +
                                std::to_string(size_ - 1) + ")");
  }
  RT_RETURN_IF_ERROR(CheckPointer("Broadcast", "data", data, count));
  RT_RETURN_IF_ERROR(CheckBytes("Broadcast", count, type, 1, ""));
  return Finish(DoBroadcast(data, count, type, root));
}

Status CommunicatorBase::AllGather(const void* in, size_t count, DataType type, void* out) {
  RT_RETURN_IF_ERROR(Usable());
  RT_RETURN_IF_ERROR(CheckType("AllGather", type));
  RT_RETURN_IF_ERROR(CheckPointer("AllGather", "in", in, count));
  RT_RETURN_IF_ERROR(CheckPointer("AllGather", "out", out, count));
  RT_RETURN_IF_ERROR(CheckBytes("AllGather", count, type, static_cast<size_t>(size_), " per rank"));
  return Finish(DoAllGather(in, count, type, out));
}

Status CommunicatorBase::Barrier() {
  RT_RETURN_IF_ERROR(Usable());
  return Finish(DoBarrier());
}

}  // namespace ringtrain::collective
