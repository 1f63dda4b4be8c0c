// What one task's training loop (recovery::TrainingRun) needs of its cluster: meet the
// others in numbered generations, get a communicator for each, and learn why a
// generation failed. ClusterSession implements it over the coordination service;
// tests script it (tests/recovery) to drive the recovery loop without processes.
//
// Errors carry their Subject (common/status.h), so that common/exit_policy.h decides
// what they mean: Rendezvous and CreateCommunicator fail About(kCluster) -- a refusal
// (INVALID_ARGUMENT, PERMISSION_DENIED, UNIMPLEMENTED, FAILED_PRECONDITION) is the
// configuration's fault, anything else a cluster that did not assemble -- except that
// Rendezvous fails ABORTED About(kPeers) when this process was declared failed or
// replaced and must exit.
//
// Threading: one thread calls every method. Blocking: Rendezvous is bounded by the
// rendezvous timeout, CreateCommunicator by the options' timeout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "collective/communicator.h"
#include "common/status.h"
#include "coordination/coordination_client.h"

namespace ringtrain::cluster {

class Session {
 public:
  virtual ~Session() = default;

  // Waits until every task has come to form the generation after `last_generation`
  // (-1: this process has none yet); `reason` says why this task left its last one.
  virtual StatusOr<coordination::RendezvousResult> Rendezvous(int64_t last_generation,
                                                              const std::string& reason) = 0;
  // A communicator over the cluster's tasks for `generation`; failures of that
  // generation reported by the cluster abort it until Detach().
  virtual StatusOr<std::unique_ptr<collective::Communicator>> CreateCommunicator(
      collective::CommunicatorOptions options, int64_t generation) = 0;
  // Stops relaying failures to the communicator (call before destroying it).
  virtual void Detach() = 0;
  // Why the current generation failed, "" if nothing is known: context for a failed collective.
  virtual std::string failure() = 0;
  // The cluster declared this process failed or replaced: it must exit.
  virtual bool evicted() = 0;
  // Orderly shutdown once this task's work is done: true if every task shut down
  // (always true off the chief); problems are logged, never returned (the work is done).
  virtual bool Leave() = 0;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool is_chief() const = 0;
};

}  // namespace ringtrain::cluster
