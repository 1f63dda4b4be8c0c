#include "coordination/coordination_client.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "common/logging.h"
#include "coordination/coordination_service.h"
#include "coordination/grpc_status.h"
#include "coordination/service_state.h"
#include "proto/coordination.grpc.pb.h"

namespace ringtrain::coordination {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often Register says it is still waiting for the chief.
constexpr milliseconds kRegisterLogEvery{3000};
// Extra time a long poll's RPC gets beyond the server-side wait, for the network.
constexpr milliseconds kMaxPollGrace{2000};

std::chrono::system_clock::time_point ToSystemDeadline(Deadline d) {
  return std::chrono::system_clock::now() + d.remaining();
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  // A worker often starts before the chief; gRPC's default backoff (1 s growing to
  // 120 s) would leave it waiting long after the chief is up.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // This is also the shortest time a connection attempt is given: much below a second
  // and a busy machine's handshakes are cut off ("tcp handshaker shutdown").
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  // Cluster traffic never goes through an HTTP proxy from the environment.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

std::vector<std::string> ToVector(const google::protobuf::RepeatedPtrField<std::string>& field) {
  return {field.begin(), field.end()};
}

}  // namespace

struct CoordinationClient::Impl {
  explicit Impl(const ClientOptions& o)
      : options(o), stub(CoordinationService::NewStub(MakeChannel(o.service_address))) {}

  const std::string& address() const { return options.service_address; }
  // The RPC deadline for one long poll that the server may hold for `wait`.
  Deadline PollDeadline(milliseconds wait) const {
    return Deadline::After(wait + std::min(options.rpc_timeout, kMaxPollGrace));
  }
  void HeartbeatLoop(milliseconds interval, milliseconds timeout, std::function<void(const std::string&)> on_failure);

  ClientOptions options;
  std::unique_ptr<CoordinationService::Stub> stub;

  std::mutex hb_mu;
  std::condition_variable hb_cv;
  bool hb_stop = false;                           // guarded by hb_mu
  grpc::ClientContext* hb_call = nullptr;         // the heartbeat in flight; guarded by hb_mu
  std::thread hb_thread;
};

CoordinationClient::CoordinationClient(const ClientOptions& options) : impl_(std::make_unique<Impl>(options)) {}

CoordinationClient::~CoordinationClient() { StopHeartbeat(); }

Status CoordinationClient::Register(const std::string& job_json, Deadline deadline) {
  RegisterRequest req;
  req.set_task(impl_->options.task);
  req.set_incarnation(impl_->options.incarnation);
  req.set_job_json(job_json);
  milliseconds backoff(100);
  Clock::time_point next_log = Clock::now();
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(Deadline::Min(deadline, Deadline::After(impl_->options.rpc_timeout))));
    RegisterResponse resp;
    grpc::Status s = impl_->stub->Register(&ctx, req, &resp);
    if (s.ok()) {
      RT_LOG(INFO) << impl_->options.task << " registered with the chief at " << impl_->address();
      return Status::Ok();
    }
    // Only "not there yet" is worth retrying; a refusal is final.
    bool retryable = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    Status error = FromGrpcStatus(s, impl_->address(), "Register");
    if (!retryable) return error;
    if (deadline.expired()) {
      return DeadlineExceededError(impl_->options.task + " could not register with the chief's coordination service at " +
                                   impl_->address() + " before the deadline: " + error.message());
    }
    if (Clock::now() >= next_log) {
      RT_LOG(INFO) << "waiting for the chief at " << impl_->address() << " (" << s.error_message() << ")";
      next_log = Clock::now() + kRegisterLogEvery;
    }
    // Bounded by the caller's deadline; this runs on the caller's thread.
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, milliseconds(1000));
    // A fresh channel connects at once, instead of after the old one's reconnect
    // backoff. Safe: Register runs before any other call on this client.
    impl_->stub = CoordinationService::NewStub(MakeChannel(impl_->options.service_address));
  }
}

Status CoordinationClient::WaitForAll(Deadline deadline, milliseconds log_every) {
  log_every = std::max(log_every, milliseconds(100));
  Clock::time_point next_log = Clock::now() + log_every;
  while (true) {
    auto until_log = std::chrono::duration_cast<milliseconds>(next_log - Clock::now());
    milliseconds wait = std::clamp(std::min({deadline.remaining(), kMaxPollWait, until_log}), milliseconds(0),
                                   kMaxPollWait);
    WaitForAllRequest req;
    req.set_task(impl_->options.task);
    req.set_wait_ms(static_cast<uint32_t>(wait.count()));
    WaitForAllResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(impl_->PollDeadline(wait)));
    RT_RETURN_IF_ERROR(FromGrpcStatus(impl_->stub->WaitForAll(&ctx, req, &resp), impl_->address(), "WaitForAll"));
    if (resp.all_registered()) return Status::Ok();

    std::vector<std::string> missing = ToVector(resp.missing_tasks());
    std::string summary = std::to_string(missing.size()) + " of " + std::to_string(resp.num_tasks()) +
                          " tasks to register: " + JoinTasks(missing);
    if (deadline.expired()) {
      return DeadlineExceededError("the cluster did not assemble before the deadline; still waiting for " + summary +
                                   "; start them, or check that their TF_CONFIG names this chief");
    }
    if (Clock::now() >= next_log) {
      RT_LOG(INFO) << "waiting for " << summary;
      next_log = Clock::now() + log_every;
    }
  }
}

Status CoordinationClient::Set(const std::string& key, const std::string& value) {
  KvSetRequest req;
  req.set_key(key);
  req.set_value(value);
  KvSetResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(ToSystemDeadline(Deadline::After(impl_->options.rpc_timeout)));
  return FromGrpcStatus(impl_->stub->KvSet(&ctx, req, &resp), impl_->address(), "KvSet('" + key + "')");
}

StatusOr<std::string> CoordinationClient::Get(const std::string& key, Deadline deadline) {
  while (true) {
    milliseconds wait = std::min(deadline.remaining(), kMaxPollWait);
    KvGetRequest req;
    req.set_key(key);
    req.set_wait_ms(static_cast<uint32_t>(wait.count()));
    KvGetResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(impl_->PollDeadline(wait)));
    RT_RETURN_IF_ERROR(FromGrpcStatus(impl_->stub->KvGet(&ctx, req, &resp), impl_->address(), "KvGet('" + key + "')"));
    if (resp.found()) return std::move(*resp.mutable_value());
    if (deadline.expired()) {
      return DeadlineExceededError("store key '" + key + "' was not set before the deadline (asked the chief's " +
                                   "coordination service at " + impl_->address() + "); the task that sets it may " +
                                   "have failed or not started");
    }
  }
}

Status CoordinationClient::Barrier(const std::string& name, Deadline deadline) {
  while (true) {
    milliseconds wait = std::min(deadline.remaining(), kMaxPollWait);
    BarrierRequest req;
    req.set_name(name);
    req.set_task(impl_->options.task);
    req.set_wait_ms(static_cast<uint32_t>(wait.count()));
    BarrierResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(impl_->PollDeadline(wait)));
    RT_RETURN_IF_ERROR(
        FromGrpcStatus(impl_->stub->Barrier(&ctx, req, &resp), impl_->address(), "Barrier('" + name + "')"));
    if (resp.passed()) return Status::Ok();
    if (deadline.expired()) {
      std::vector<std::string> missing = ToVector(resp.missing_tasks());
      return DeadlineExceededError("barrier '" + name + "' timed out: " + std::to_string(missing.size()) + " of " +
                                   std::to_string(resp.num_tasks()) + " tasks did not arrive: " + JoinTasks(missing));
    }
  }
}

void CoordinationClient::StartHeartbeat(milliseconds interval, milliseconds timeout,
                                        std::function<void(const std::string&)> on_failure) {
  StopHeartbeat();
  std::lock_guard<std::mutex> lock(impl_->hb_mu);
  impl_->hb_stop = false;
  impl_->hb_thread = std::thread([impl = impl_.get(), interval, timeout, cb = std::move(on_failure)]() mutable {
    impl->HeartbeatLoop(interval, timeout, std::move(cb));
  });
}

void CoordinationClient::StopHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(impl_->hb_mu);
    impl_->hb_stop = true;
    if (impl_->hb_call) impl_->hb_call->TryCancel();  // do not wait out the RPC's deadline
  }
  impl_->hb_cv.notify_all();
  // From on_failure (the heartbeat thread itself) the loop just ends; the owner's
  // later StopHeartbeat() or destructor joins it.
  if (impl_->hb_thread.joinable() && impl_->hb_thread.get_id() != std::this_thread::get_id()) {
    impl_->hb_thread.join();
  }
}

void CoordinationClient::Impl::HeartbeatLoop(milliseconds interval, milliseconds timeout,
                                             std::function<void(const std::string&)> on_failure) {
  Clock::time_point last_ok = Clock::now();
  bool reported = false;
  std::unique_lock<std::mutex> lock(hb_mu);
  while (!hb_stop) {
    HeartbeatRequest req;
    req.set_task(options.task);
    req.set_incarnation(options.incarnation);
    HeartbeatResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(Deadline::After(std::min(options.rpc_timeout, timeout))));
    hb_call = &ctx;
    lock.unlock();
    grpc::Status s = stub->Heartbeat(&ctx, req, &resp);
    lock.lock();
    hb_call = nullptr;
    if (hb_stop) break;

    std::string failure;
    if (s.ok()) {
      last_ok = Clock::now();
      for (const auto& f : resp.failed_tasks()) {
        failure += (failure.empty() ? "" : "; ") + f.reason();
      }
      if (!failure.empty()) failure = "the coordination service declared a task failed: " + failure;
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
               s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
               s.error_code() == grpc::StatusCode::CANCELLED) {  // the server went away mid-call
      // Transient until it lasts longer than the timeout: the chief may be briefly busy.
      auto silent = std::chrono::duration_cast<milliseconds>(Clock::now() - last_ok);
      if (silent > timeout) {
        failure = "lost contact with the chief's coordination service at " + options.service_address + " for " +
                  std::to_string(silent.count()) + " ms (heartbeat timeout " + std::to_string(timeout.count()) +
                  " ms): " + s.error_message();
      }
    } else {
      failure = FromGrpcStatus(s, options.service_address, "Heartbeat").message();
    }
    if (!failure.empty() && !reported) {
      reported = true;
      RT_LOG(ERROR) << failure;
      lock.unlock();
      on_failure(failure);
      lock.lock();
    }
    // Keep heartbeating after a report: this task is alive, and the others should
    // learn about the failed one, not about us.
    hb_cv.wait_for(lock, interval, [this] { return hb_stop; });
  }
}

Status CoordinationClient::Shutdown(Deadline deadline) {
  StopHeartbeat();  // a finished task is no longer watched; stop before telling the chief
  ShutdownRequest req;
  req.set_task(impl_->options.task);
  ShutdownResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(ToSystemDeadline(Deadline::Min(deadline, Deadline::After(impl_->options.rpc_timeout))));
  RT_RETURN_IF_ERROR(FromGrpcStatus(impl_->stub->Shutdown(&ctx, req, &resp), impl_->address(), "Shutdown"));
  RT_LOG(INFO) << impl_->options.task << " told the chief it is shutting down";
  return Status::Ok();
}

}  // namespace ringtrain::coordination
