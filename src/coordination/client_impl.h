// Internal to the coordination client (coordination_client.cc, client_recovery.cc):
// the state behind CoordinationClient and the helpers both files use. Not a public
// header; nothing outside src/coordination/ includes it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "coordination/coordination_client.h"
#include "proto/coordination.grpc.pb.h"

namespace ringtrain::coordination {
namespace client_internal {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Extra time a long poll's RPC gets beyond the server-side wait, for the network.
constexpr milliseconds kMaxPollGrace{2000};

inline std::chrono::system_clock::time_point ToSystemDeadline(Deadline d) {
  return std::chrono::system_clock::now() + d.remaining();
}


inline std::vector<std::string> ToVector(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

}  // namespace client_internal

struct CoordinationClient::Impl {
  explicit Impl(const ClientOptions& o)
      : options(o),
        stub(CoordinationService::NewStub(MakeChannel(o.service_address, o.tls))),
        service_address(o.service_address) {}

  // Where the coordination service is: the chief's address, or its successor's (elastic).
  std::string address() const {
    std::lock_guard<std::mutex> lock(stub_mu);
    return service_address;
  }
  // From now on every call goes to the service at `address` (chief succession).
  void SwitchTo(const std::string& address) {
    auto fresh = CoordinationService::NewStub(MakeChannel(address, options.tls));
    std::lock_guard<std::mutex> lock(stub_mu);
    service_address = address;
    stub = std::move(fresh);
  }
  // Elastic succession, after the chief's service was lost: the address of the first
  // successor (ClientOptions::successors) whose service answers, this task's own once it
  // started one (become_coordinator); "" if none or the heartbeat is being stopped.
  // Blocks up to `per_candidate` for each. Call without hb_mu.
  std::string FindSuccessor(std::chrono::milliseconds per_candidate);
  // The RPC deadline for one long poll that the server may hold for `wait`.
  Deadline PollDeadline(std::chrono::milliseconds wait) const {
    return Deadline::After(wait + std::min(options.rpc_timeout, client_internal::kMaxPollGrace));
  }
  // Adds the proof of the cluster secret for a call of `method` (call_auth.h's
  // method::k*) carrying `request` about to be made: single-use (a fresh nonce), bound to
  // this task and to the request's bytes. Nothing without a secret. Call it once per
  // attempt, after the request is complete (a retry gets a new context and a new proof).
  void Authorize(grpc::ClientContext* ctx, const char* method, const google::protobuf::MessageLite& request) const {
    if (!options.cluster_secret.configured()) return;
    // The stub serializes the same message with the same library: the same bytes.
    ctx->AddMetadata(kAuthMetadataKey, MakeAuthToken(options.cluster_secret, options.task, method,
                                                     request.SerializeAsString(), UnixMillisNow()));
  }
  // The current stub; the caller's copy stays valid if another thread replaces it.
  std::shared_ptr<CoordinationService::Stub> Stub() {
    std::lock_guard<std::mutex> lock(stub_mu);
    return stub;
  }
  // A fresh channel connects at once, instead of after the old one's reconnect backoff
  // (up to a second), which matters when the chief has just come (back) up.
  void ResetChannel() {
    auto fresh = CoordinationService::NewStub(MakeChannel(address(), options.tls));
    std::lock_guard<std::mutex> lock(stub_mu);
    stub = std::move(fresh);
  }
  Status RegisterUntil(const std::string& job_json, Deadline deadline);
  void HeartbeatLoop(std::chrono::milliseconds interval, std::chrono::milliseconds timeout, std::function<void(const ClusterEvent&)> on_event);

  const ClientOptions options;
  std::atomic<int64_t> last_generation{-1};  // the newest the service reported
  std::atomic<double> straggler_score{1.0};   // the last heartbeat's

  mutable std::mutex stub_mu;
  std::shared_ptr<CoordinationService::Stub> stub;  // guarded by stub_mu
  std::string service_address;                      // guarded by stub_mu
  bool become_coordinator_tried = false;            // heartbeat thread only
  std::string job_json;                             // of the last Register; guarded by stub_mu

  std::mutex hb_mu;
  std::condition_variable hb_cv;
  bool hb_stop = false;                           // guarded by hb_mu
  grpc::ClientContext* hb_call = nullptr;         // the heartbeat in flight; guarded by hb_mu
  ProgressSource progress;                        // guarded by hb_mu
  std::thread hb_thread;
};

}  // namespace ringtrain::coordination
