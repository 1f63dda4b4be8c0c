#include "cluster/failure_relay.h"

#include "common/logging.h"

namespace ringtrain::cluster {

using coordination::ClusterEvent;

void FailureRelay::AbortLocked(const std::string& why) {
  if (!failure_.empty()) return;
  failure_ = why;
  if (comm_ != nullptr) {
    RT_LOG(ERROR) << "cluster failure: " << why;
    comm_->Abort(why);
  }
}

void FailureRelay::OnEvent(const ClusterEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (event.kind) {
    case ClusterEvent::Kind::kGenerationBroken:
      if (event.generation > broken_up_to_) {
        broken_up_to_ = event.generation;
        broken_reason_ = event.message;
      }
      if (comm_ != nullptr && event.generation >= generation_) AbortLocked(event.message);
      break;
    case ClusterEvent::Kind::kChiefLost:
    case ClusterEvent::Kind::kServiceRestarted:
      // Between generations the rendezvous finds this out by itself.
      if (comm_ != nullptr) AbortLocked(event.message);
      break;
    case ClusterEvent::Kind::kEvicted:
      evicted_ = true;
      AbortLocked(event.message);
      if (comm_ == nullptr) RT_LOG(ERROR) << event.message;
      break;
  }
}

void FailureRelay::Attach(collective::Communicator* comm, int64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  comm_ = comm;
  generation_ = generation;
  if (evicted_) return;  // keep the eviction's message
  failure_.clear();
  if (comm_ != nullptr && generation_ <= broken_up_to_) AbortLocked(broken_reason_);
}

std::string FailureRelay::failure() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

bool FailureRelay::evicted() {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_;
}

}  // namespace ringtrain::cluster
