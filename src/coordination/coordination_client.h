// A task's connection to the chief's coordination service. Implements Store (the
// key-value store used to exchange data-plane endpoints) over gRPC.
//
// Every RPC carries a deadline. Errors are converted at this edge: UNAVAILABLE becomes
// kUnavailable "cannot reach the chief's coordination service at ADDR ..."; refusals
// by the service keep their code and message. Threading: thread-safe; the heartbeat
// runs on its own thread between StartHeartbeat() and StopHeartbeat()/destruction.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "store/store.h"

namespace ringtrain::coordination {

struct ClientOptions {
  std::string service_address;  // the chief's "host:port"
  std::string task;             // this task, e.g. "worker:1"
  uint64_t incarnation = 0;     // random per process start
  // Per-RPC deadline for short calls (set, heartbeat, shutdown).
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(10)};
};

class CoordinationClient : public Store {
 public:
  explicit CoordinationClient(const ClientOptions& options);
  ~CoordinationClient() override;  // stops the heartbeat; never throws

  // Call first, before any other method (it may replace the channel).
  // Registers this task, retrying while the service is not up yet (the chief may
  // start after a worker) until the deadline. PERMISSION_DENIED if the chief refuses
  // (e.g. a different job; the message names the differing field); INVALID_ARGUMENT
  // for a task not in the cluster.
  Status Register(const std::string& job_json, Deadline deadline);
  // Waits until every expected task has registered. Logs every `log_every` which
  // tasks are still missing. DEADLINE_EXCEEDED names them.
  Status WaitForAll(Deadline deadline, std::chrono::milliseconds log_every = std::chrono::seconds(5));

  // Store.
  Status Set(const std::string& key, const std::string& value) override;
  StatusOr<std::string> Get(const std::string& key, Deadline deadline) override;

  // Returns once every registered task has called Barrier(name); DEADLINE_EXCEEDED
  // names the tasks that did not arrive.
  Status Barrier(const std::string& name, Deadline deadline);

  // Sends a heartbeat every `interval`. When the service reports a failed task, or
  // cannot be reached for longer than `timeout`, calls on_failure(message) once
  // (from the heartbeat thread; it must not block). Heartbeats continue after that.
  // A refusal (e.g. ABORTED: this process was replaced by a restart) is reported at once.
  // StopHeartbeat() cancels the call in flight and joins; it returns promptly.
  void StartHeartbeat(std::chrono::milliseconds interval, std::chrono::milliseconds timeout,
                      std::function<void(const std::string&)> on_failure);
  void StopHeartbeat();

  // Tells the service this task is done (orderly shutdown). Stops the heartbeat first,
  // since a finished task is no longer watched.
  Status Shutdown(Deadline deadline);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::coordination
