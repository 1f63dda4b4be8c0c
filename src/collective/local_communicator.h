// The communicator for a job of one rank: every collective is local arithmetic, no
// sockets. It still validates arguments and honours Abort() (CommunicatorBase), so code
// written against Communicator behaves the same at size 1 as at size n.
// Threading: as Communicator; Abort() may be called from any thread.
#pragma once

#include "collective/communicator_base.h"

namespace ringtrain::collective {

class LocalCommunicator : public CommunicatorBase {
 public:
  LocalCommunicator() : CommunicatorBase(0, 1) {}

  const char* backend_name() const override { return "LOCAL"; }

 protected:
  Status DoAllReduce(void* data, size_t count, DataType type, ReduceOp op) override;
  Status DoBroadcast(void* data, size_t count, DataType type, int root) override { return Status::Ok(); }
  Status DoAllGather(const void* in, size_t count, DataType type, void* out) override;
  Status DoBarrier() override { return Status::Ok(); }
};

}  // namespace ringtrain::collective
