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
#include <mutex>
#include <string>

#include "cluster/failure_relay.h"
#include "cluster/session.h"
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

// Elastic membership (job field "elastic"): the chief's service applies the policy, and
// `on_adopt` is told (on the heartbeat thread) each absent task this process should host.
// Where a process's tasks find the coordination service once the chief's is gone for
// good (elastic chief succession): shared by the tasks one process hosts.
class CoordinatorAddress {
 public:
  std::string Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return address_;
  }
  void Set(const std::string& address) {
    std::lock_guard<std::mutex> lock(mu_);
    address_ = address;
  }

 private:
  mutable std::mutex mu_;
  std::string address_;  // "" : the chief's
};

struct SessionElastic {
  coordination::ElasticPolicy policy;
  std::function<void(const std::string& task)> on_adopt;
  // With a policy: the service moves to the first surviving task after the chief when
  // the chief is lost for good, and a task joining later (the chief's own task, hosted
  // or back) joins it there instead of starting one. Null: the chief's only.
  std::shared_ptr<CoordinatorAddress> coordinator;
};

class ClusterSession : public Session {
 public:
  // Starts the coordination service on the chief, registers `job_json` and starts the
  // heartbeat. The chief's service binds the chief's TF_CONFIG address (every interface
  // with settings.bind_all) and admits only the cluster's hosts (unless
  // settings.check_peer_address is off) holding `security`'s secret. Errors are
  // About(kCluster): a refusal (different job, unknown task, a cluster secret the chief
  // does not accept, an address that cannot be served) is INVALID_ARGUMENT or
  // PERMISSION_DENIED, a cluster that did not assemble in time anything else.
  // On the chief, `status_extras` adds rows for tasks outside the ring to every
  // GetStatus answer (coordination::ServerOptions::status_extras; the evaluator's).
  static StatusOr<std::unique_ptr<ClusterSession>> Join(
      const config::ClusterSpec& spec, const config::Settings& settings, const std::string& job_json,
      const SessionSecurity& security = {},
      std::function<void(coordination::GetStatusResponse*)> status_extras = nullptr,
      const SessionElastic& elastic = {});
  ~ClusterSession() override;  // stops the heartbeat and the service; bounded, never throws

  // Session::Rendezvous. DEADLINE_EXCEEDED names the missing tasks; ABORTED (About
  // kPeers): this process was declared failed or replaced and must exit.
  StatusOr<coordination::RendezvousResult> Rendezvous(int64_t last_generation, const std::string& reason) override;

  // A communicator over this cluster's tasks in rank order for generation
  // `generation`, exchanging endpoints under "ring/<generation>/" in the coordination
  // store; heartbeat events about that generation abort it. options.listen_host is set
  // here: RINGTRAIN_DATA_HOST, else the task's TF_CONFIG host. Errors are About(kCluster):
  // an impossible request (e.g. NCCL in a build without it) is a refusal (exit 2).
  StatusOr<std::unique_ptr<collective::Communicator>> CreateCommunicator(collective::CommunicatorOptions options,
                                                                         int64_t generation) override;
  void Detach() override { relay_.Detach(); }
  std::string failure() override { return relay_.failure(); }
  bool evicted() override { return relay_.evicted(); }
  // Session::Leave: tells the service this task is done; the chief then waits for
  // every task to do so (bounded by the shutdown timeout).
  bool Leave() override;
  // What this task's heartbeats carry from now on (`ringtrain status`); `source` must
  // stay valid until this session is destroyed.
  void SetProgressSource(coordination::ProgressSource source) { client_->SetProgressSource(std::move(source)); }
  // This task's straggler score as the chief last judged it (CoordinationClient).
  double straggler_score() const { return client_->straggler_score(); }

  int rank() const override { return spec_.rank(); }
  int size() const override { return spec_.num_workers(); }
  bool is_chief() const override { return spec_.is_chief(); }

 private:
  ClusterSession(const config::ClusterSpec& spec, const config::Settings& settings);
  config::ClusterSpec spec_;
  config::Settings settings_;
  // Declared before the client, whose heartbeat thread calls it, so that it outlives it.
  FailureRelay relay_;
  // On the chief, or on its successor (started by the heartbeat thread, which Leave and
  // the destructor stop before they look at it).
  std::unique_ptr<coordination::CoordinationServer> server_;
  std::unique_ptr<coordination::CoordinationClient> client_;
  std::unique_ptr<store::PrefixStore> store_;  // the current communicator's keys
};

}  // namespace ringtrain::cluster
