// A task's connection to the chief's coordination service. Implements Store (the
// key-value store used to exchange data-plane endpoints) over gRPC.
//
// Every RPC carries a deadline. Errors are converted at this edge: UNAVAILABLE becomes
// kUnavailable "cannot reach the chief's coordination service at ADDR ..."; refusals
// by the service keep their code and message. Threading: thread-safe; the heartbeat
// runs on its own thread between StartHeartbeat() and StopHeartbeat()/destruction,
// and may run while another thread is in Rendezvous (the channel is shared and may be
// replaced by a fresh one under a mutex; each call holds its own reference).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "coordination/tls.h"
#include "security/cluster_secret.h"
#include "store/store.h"

namespace ringtrain::coordination {

class TaskProgress;  // proto/coordination.proto

// Called on the heartbeat thread before each heartbeat: fills what the task reports of
// its training (`ringtrain status`) and returns true, or returns false when there is
// nothing yet. Must return at once (cluster/progress_reporter.h copies under a lock).
using ProgressSource = std::function<bool(TaskProgress*)>;

struct ClientOptions {
  std::string service_address;  // the chief's "host:port"
  std::string task;             // this task, e.g. "worker:1"
  uint64_t incarnation = 0;     // random per process start
  // Per-RPC deadline for short calls (set, heartbeat, shutdown).
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(10)};
  // Proof of it goes with every call (call_auth.h); a chief with a different secret
  // refuses them (PERMISSION_DENIED "... cluster secret ...").
  security::ClusterSecret cluster_secret;
  // Mutual TLS to the chief when enabled (tls.h).
  TlsCredentials tls;
  // Elastic: called from the heartbeat thread with each absent task the service says
  // this process should host (again at every heartbeat until it registers); null: ignored.
  std::function<void(const std::string& task)> on_adopt;
  // Elastic chief succession: the training tasks after the chief in rank order, as
  // {task, "host:port"}; empty: the chief's service only (today's rule). When the
  // service is lost for longer than the heartbeat timeout, the first of them whose
  // address answers is the new service; when this task comes first among those alive,
  // become_coordinator must start one at its own address (heartbeat thread), and
  // on_coordinator is told every new address.
  std::vector<std::pair<std::string, std::string>> successors;
  std::function<Status()> become_coordinator;
  std::function<void(const std::string& address)> on_coordinator;
};

// Something the heartbeat learned that the task must act on.
struct ClusterEvent {
  enum class Kind {
    kGenerationBroken,  // the service reports `generation` broken; message = its reason
    kChiefLost,         // no successful heartbeat for longer than the timeout
    kServiceRestarted,  // the service no longer knows this task (the chief restarted)
    kEvicted,           // this process was declared failed or replaced; it must exit
  };
  Kind kind;
  int64_t generation = -1;  // kGenerationBroken: the broken generation
  std::string message;
};
const char* ToString(ClusterEvent::Kind kind);

// Whether a coordination service answers at `address` within `timeout` (any answer, a
// refusal of an unknown task included), asked as options.task. Elastic chief succession.
bool ServiceAnswersAt(const ClientOptions& options, const std::string& address, std::chrono::milliseconds timeout);

struct RendezvousResult {
  int64_t generation = -1;    // the generation formed (when not job_finished)
  bool job_finished = false;  // some task already finished the job: nothing to rejoin
};

class CoordinationClient : public store::Store {
 public:
  explicit CoordinationClient(const ClientOptions& options);
  ~CoordinationClient() override;  // stops the heartbeat; never throws

  // Call first, before any other method. Registers this task, retrying while the service is not up yet (the chief may
  // start after a worker) until the deadline. PERMISSION_DENIED if the chief refuses
  // (e.g. a different job; the message names the differing field); INVALID_ARGUMENT
  // for a task not in the cluster.
  Status Register(const std::string& job_json, Deadline deadline);
  // Store.
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;

  // Returns once every registered task has called Barrier(name); DEADLINE_EXCEEDED
  // names the tasks that did not arrive.
  Status Barrier(const std::string& name, Deadline deadline);

  // Arrives for the generation after `last_generation` (-1: this process was in none)
  // and long-polls until it is formed, the job is finished, or the deadline. `reason`
  // says why this task leaves `last_generation` (for the chief's log). Retries
  // UNAVAILABLE / DEADLINE_EXCEEDED of single RPCs on a fresh channel until the
  // deadline (the chief may be restarting). When the service no longer knows this task
  // (FAILED_PRECONDITION: the chief restarted), registers again with the incarnation and
  // job JSON of the last Register, then arrives again. Logs every `log_every` which
  // tasks are missing. DEADLINE_EXCEEDED names the missing tasks (or says the chief was
  // unreachable); ABORTED from the service is returned as is: this process must exit.
  // Blocks the calling thread up to the deadline.
  StatusOr<RendezvousResult> Rendezvous(int64_t last_generation, const std::string& reason, Deadline deadline,
                                        std::chrono::milliseconds log_every = std::chrono::seconds(5));

  // Sends a heartbeat every `interval` and calls on_event (from the heartbeat thread;
  // it must not block) each time something new happens: kGenerationBroken once per
  // broken generation; kChiefLost once per outage longer than `timeout` (re-armed by a
  // successful heartbeat); kServiceRestarted once until a heartbeat succeeds again;
  // kEvicted once, after which the heartbeat stops. Heartbeats continue after every
  // other event. StopHeartbeat() cancels the call in flight and joins; it returns
  // promptly (called from on_event it only ends the loop).
  void StartHeartbeat(std::chrono::milliseconds interval, std::chrono::milliseconds timeout,
                      std::function<void(const ClusterEvent&)> on_event);
  void StopHeartbeat();
  // What each later heartbeat carries (nullptr: nothing). The source must stay valid
  // until StopHeartbeat() or destruction.
  void SetProgressSource(ProgressSource source);
  // The newest generation the service reported (heartbeat or Rendezvous); -1 before.
  int64_t last_known_generation() const;
  // This task's straggler score from the last heartbeat's answer (the chief's
  // StragglerDetector::Score); 1 before any.
  double straggler_score() const;

  // Tells the service this task is done (orderly shutdown). Stops the heartbeat first,
  // since a finished task is no longer watched.
  Status Shutdown(Deadline deadline);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::coordination
