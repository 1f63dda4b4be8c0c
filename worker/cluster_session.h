// Joining a TF_CONFIG cluster the way every task does: the chief hosts the
// coordination service, every task registers with its job JSON (the chief refuses a
// different one), waits for all tasks, and keeps a heartbeat whose failure aborts the
// communicator. Used by `ringtrain bench`; `ringtrain worker` can switch to it.
//
// Threading: Join, CreateCommunicator and Leave are called from one thread; the
// heartbeat thread only calls into the failure relay (mutex-guarded).
// Blocking: Join is bounded by settings.rendezvous_timeout_s, CreateCommunicator by
// the options' timeout, Leave by settings.shutdown_timeout_s.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "collective/communicator.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"

namespace ringtrain::cli {

// Lets the heartbeat thread abort the communicator, which may not exist yet.
class FailureRelay {
 public:
  void Fail(const std::string& why);
  void Attach(Communicator* comm);  // not owned; nullptr detaches
  std::string failure();            // "" while nothing failed

 private:
  std::mutex mu_;
  Communicator* comm_ = nullptr;  // guarded by mu_
  std::string failure_;           // guarded by mu_
};

class ClusterSession {
 public:
  // Starts the coordination service on the chief, registers `job_json`, waits for all
  // tasks and starts the heartbeat. On failure, *exit_code is kExitBadConfig for a
  // refusal (different job, unknown task) and kExitRendezvous otherwise.
  static StatusOr<std::unique_ptr<ClusterSession>> Join(const config::ClusterSpec& spec,
                                                        const config::Settings& settings,
                                                        const std::string& job_json, int* exit_code);
  ~ClusterSession();  // stops the heartbeat and the service; bounded, never throws

  // A communicator over this cluster's tasks in rank order, exchanging endpoints under
  // "ring/<generation>/" in the coordination store; a heartbeat failure aborts it.
  // options.listen_host is set here: RINGTRAIN_DATA_HOST, else the task's TF_CONFIG host.
  // On failure, *exit_code is kExitBadConfig for an impossible request (e.g. NCCL in a
  // build without it) and kExitRendezvous otherwise.
  StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(CommunicatorOptions options, int generation,
                                                             int* exit_code);
  // Detaches the communicator (call before destroying it).
  void Detach() { relay_.Attach(nullptr); }
  // The heartbeat's failure report, "" if none: context for a failed collective.
  std::string failure() { return relay_.failure(); }
  // Orderly shutdown: tells the service this task is done; the chief then waits for
  // every task to do so. Problems are logged, not returned (the work is done).
  void Leave();

  int rank() const { return spec_.rank(); }
  int size() const { return spec_.num_workers(); }

 private:
  ClusterSession(const config::ClusterSpec& spec, const config::Settings& settings);
  config::ClusterSpec spec_;
  config::Settings settings_;
  // Declared before the client, whose heartbeat thread calls it, so that it outlives it.
  FailureRelay relay_;
  std::unique_ptr<coordination::CoordinationServer> server_;  // on the chief only
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::unique_ptr<PrefixStore> store_;  // the current communicator's keys
};

}  // namespace ringtrain::cli
