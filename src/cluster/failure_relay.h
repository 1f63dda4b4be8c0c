// Turns the heartbeat's cluster events into aborts of the communicator of the current
// generation, which may not exist yet (or any more) when an event arrives.
//
// Threading: OnEvent runs on the heartbeat thread; the rest on the training thread.
// Every method takes the mutex and none blocks beyond it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "collective/communicator.h"
#include "coordination/coordination_client.h"

namespace ringtrain::cluster {

class FailureRelay {
 public:
  void OnEvent(const coordination::ClusterEvent& event);
  // `comm` (not owned) is generation `generation`'s; aborted at once if that
  // generation is already known to be broken. nullptr detaches.
  void Attach(collective::Communicator* comm, int64_t generation);
  void Detach() { Attach(nullptr, -1); }
  // Why the attached generation failed, "" while nothing is known to have failed.
  std::string failure();
  // This process was declared failed or replaced: it must exit.
  bool evicted();

 private:
  void AbortLocked(const std::string& why);

  std::mutex mu_;
  collective::Communicator* comm_ = nullptr;  // guarded by mu_
  int64_t generation_ = -1;       // of comm_; guarded by mu_
  int64_t broken_up_to_ = -1;     // every generation <= this is broken; guarded by mu_
  std::string broken_reason_;     // of broken_up_to_; guarded by mu_
  std::string failure_;           // of the attached generation; guarded by mu_
  bool evicted_ = false;          // guarded by mu_
};

}  // namespace ringtrain::cluster
