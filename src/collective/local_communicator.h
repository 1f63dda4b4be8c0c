// The communicator for a job of one rank: every collective is local arithmetic, no
// sockets. It still validates arguments and honours Abort(), so code written against
// Communicator behaves the same at size 1 as at size n.
// Threading: as Communicator; Abort() may be called from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "collective/communicator.h"

namespace ringtrain::collective {

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend_name() const override { return "LOCAL"; }

  Status AllReduce(float* data, size_t count, ReduceOp op) override;
  Status Broadcast(float* data, size_t count, int root) override;
  Status AllGather(const float* in, size_t count, float* out) override;
  Status Barrier() override;
  void Abort(const std::string& reason) override;

 private:
  Status CheckAborted() const;

  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;
  std::string abort_reason_;  // guarded by mu_
};

}  // namespace ringtrain::collective
