// The cluster of a worker run without TF_CONFIG: this one process, as TensorFlow's
// MultiWorkerMirroredStrategy trains as a single local worker when TF_CONFIG is unset.
// No coordination service, no sockets: every generation forms at once with this task
// alone, over the one-rank communicator (or NCCL on one GPU when asked for).
//
// Threading and blocking: as Session; nothing here waits.
#pragma once

#include <memory>
#include <string>

#include "cluster/session.h"
#include "store/store.h"

namespace ringtrain::cluster {

class LocalSession : public Session {
 public:
  StatusOr<coordination::RendezvousResult> Rendezvous(int64_t last_generation, const std::string& reason) override;
  StatusOr<std::unique_ptr<collective::Communicator>> CreateCommunicator(collective::CommunicatorOptions options,
                                                                         int64_t generation) override;
  void Detach() override {}
  std::string failure() override { return ""; }
  bool evicted() override { return false; }
  bool Leave() override { return true; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  bool is_chief() const override { return true; }

 private:
  store::InMemoryStore store_;  // for a backend that publishes its topology (NCCL)
};

}  // namespace ringtrain::cluster
