// Membership of a TF_CONFIG cluster, the way every task holds it: the chief hosts the
// coordination service; every task registers with its job JSON (the chief refuses a
// different one), heartbeats, and meets the others in numbered generations. Each
// generation gets its own communicator; a failure anywhere breaks the generation, the
// heartbeat aborts its communicator, and the survivors meet again in the next one
// once the failed task is back (recovery in place).
//
// Threading: every method from one thread; the heartbeat thread only calls into the
// failure relay. Blocking: Join and Rendezvous are bounded by the rendezvous timeout,
// CreateCommunicator by the options' timeout, Leave by the shutdown timeout.
#pragma once

#include <memory>
#include <string>

#include "cluster/failure_relay.h"
#include "collective/communicator.h"
#include "config/settings.h"
#include "config/tf_config.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_server.h"
#include "coordination/tls.h"
#include "security/cluster_secret.h"
#include "store/store.h"

namespace ringtrain::cluster {

// Who is admitted: the cluster secret (proof on every coordination call; the chief
// refuses calls without it) and optional mutual TLS for the coordination service.
// Default: neither (a loopback cluster; the worker enforces that rule).
struct SessionSecurity {
  security::ClusterSecret cluster_secret;
  coordination::TlsCredentials tls;
};

class ClusterSession {
 public:
  // Starts the coordination service on the chief, registers `job_json` and starts the
  // heartbeat. The chief's service binds the chief's TF_CONFIG address (every interface
  // with settings.bind_all) and admits only the cluster's hosts (unless
  // settings.check_peer_address is off) holding `security`'s secret. On failure,
  // *exit_code is kExitBadConfig for a refusal (different job, unknown task, a cluster
  // secret the chief does not accept) and kExitRendezvous otherwise.
  static StatusOr<std::unique_ptr<ClusterSession>> Join(const config::ClusterSpec& spec,
                                                        const config::Settings& settings,
                                                        const std::string& job_json, int* exit_code,
                                                        const SessionSecurity& security = {});
  ~ClusterSession();  // stops the heartbeat and the service; bounded, never throws

  // Waits until every task has come to form the generation after `last_generation`
  // (-1: this process has none yet); `reason` says why this task left its last one.
  // DEADLINE_EXCEEDED names the missing tasks; ABORTED: this process was declared
  // failed or replaced and must exit.
  StatusOr<coordination::RendezvousResult> Rendezvous(int64_t last_generation, const std::string& reason);

  // A communicator over this cluster's tasks in rank order for generation
  // `generation`, exchanging endpoints under "ring/<generation>/" in the coordination
  // store; heartbeat events about that generation abort it. options.listen_host is set
  // here: RINGTRAIN_DATA_HOST, else the task's TF_CONFIG host. On failure, *exit_code is
  // kExitBadConfig for an impossible request (e.g. NCCL in a build without it) and
  // kExitRendezvous otherwise.
  StatusOr<std::unique_ptr<collective::Communicator>> CreateCommunicator(collective::CommunicatorOptions options, int64_t generation,
                                                             int* exit_code);
  // Detaches the communicator (call before destroying it).
  void Detach() { relay_.Detach(); }
  // Why the current generation failed, "" if nothing is known: context for a failed collective.
  std::string failure() { return relay_.failure(); }
  // The service declared this process failed or replaced: it must exit.
  bool evicted() { return relay_.evicted(); }
  // Orderly shutdown: tells the service this task is done; the chief then waits for
  // every task to do so. Returns whether every task shut down (always true off the
  // chief); problems are logged (the work is done).
  bool Leave();

  int rank() const { return spec_.rank(); }
  int size() const { return spec_.num_workers(); }
  bool is_chief() const { return spec_.is_chief(); }

 private:
  ClusterSession(const config::ClusterSpec& spec, const config::Settings& settings);
  config::ClusterSpec spec_;
  config::Settings settings_;
  // Declared before the client, whose heartbeat thread calls it, so that it outlives it.
  FailureRelay relay_;
  std::unique_ptr<coordination::CoordinationServer> server_;  // on the chief only
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::unique_ptr<store::PrefixStore> store_;  // the current communicator's keys
};

}  // namespace ringtrain::cluster
