#include "coordination/coordination_client.h"

#include <algorithm>
#include <thread>

#include "common/logging.h"
#include "coordination/client_impl.h"
#include "coordination/coordination_service.h"
#include "coordination/grpc_status.h"
#include "coordination/service_state.h"

namespace ringtrain::coordination {

using namespace client_internal;  // NOLINT: this file's own helpers

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address, const TlsCredentials& tls) {
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
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(tls), args);
}

namespace {

// How often Register says it is still waiting for the chief.
constexpr milliseconds kRegisterLogEvery{3000};

}  // namespace

CoordinationClient::CoordinationClient(const ClientOptions& options) : impl_(std::make_unique<Impl>(options)) {}

CoordinationClient::~CoordinationClient() { StopHeartbeat(); }

Status CoordinationClient::Register(const std::string& job_json, Deadline deadline) {
  {
    std::lock_guard<std::mutex> lock(impl_->stub_mu);
    impl_->job_json = job_json;  // Rendezvous registers again with it if the chief restarts
  }
  return impl_->RegisterUntil(job_json, deadline);
}

Status CoordinationClient::Impl::RegisterUntil(const std::string& job, Deadline deadline) {
  RegisterRequest req;
  req.set_task(options.task);
  req.set_incarnation(options.incarnation);
  req.set_job_json(job);
  // Short at first: the chief's service is usually a few milliseconds from listening
  // (every task of a cluster starts together), and a refused connection costs nothing.
  milliseconds backoff(10);
  Clock::time_point next_log = Clock::now();
  while (true) {
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(Deadline::Min(deadline, Deadline::After(options.rpc_timeout))));
    Authorize(&ctx, method::kRegister, req);
    RegisterResponse resp;
    grpc::Status s = Stub()->Register(&ctx, req, &resp);
    if (s.ok()) {
      RT_LOG(INFO) << options.task << " registered with the chief at " << address();
      return Status::Ok();
    }
    // Only "not there yet" is worth retrying; a refusal is final.
    bool retryable = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    Status error = FromGrpcStatus(s, address(), "Register");
    if (!retryable) return error;
    if (deadline.expired()) {
      return DeadlineExceededError(options.task + " could not register with the chief's coordination service at " +
                                   address() + " before the deadline: " + error.message());
    }
    if (Clock::now() >= next_log) {
      // The chief not listening yet is how every cluster starts: say so, without the
      // transport's "Connection refused" (which reads as an error). Other causes stay.
      const bool not_up = s.error_message().find("Connection refused") != std::string::npos;
      RT_LOG(INFO) << "waiting for the chief at " << address()
                   << (not_up ? " (its coordination service is not listening yet)" : " (" + s.error_message() + ")");
      next_log = Clock::now() + kRegisterLogEvery;
    }
    // Bounded by the caller's deadline; this runs on the caller's thread.
    std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, milliseconds(1000));
    ResetChannel();
  }
}

Status CoordinationClient::Set(const std::string& key, const std::string& value) {
  KvSetRequest req;
  req.set_key(key);
  req.set_value(value);
  KvSetResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(ToSystemDeadline(Deadline::After(impl_->options.rpc_timeout)));
  impl_->Authorize(&ctx, method::kKvSet, req);
  return FromGrpcStatus(impl_->Stub()->KvSet(&ctx, req, &resp), impl_->address(), "KvSet('" + key + "')");
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
    impl_->Authorize(&ctx, method::kKvGet, req);
    RT_RETURN_IF_ERROR(FromGrpcStatus(impl_->Stub()->KvGet(&ctx, req, &resp), impl_->address(), "KvGet('" + key + "')"));
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
    impl_->Authorize(&ctx, method::kBarrier, req);
    RT_RETURN_IF_ERROR(
        FromGrpcStatus(impl_->Stub()->Barrier(&ctx, req, &resp), impl_->address(), "Barrier('" + name + "')"));
    if (resp.passed()) return Status::Ok();
    if (deadline.expired()) {
      std::vector<std::string> missing = ToVector(resp.missing_tasks());
      return DeadlineExceededError("barrier '" + name + "' timed out: " + std::to_string(missing.size()) + " of " +
                                   std::to_string(resp.num_tasks()) + " tasks did not arrive: " + JoinTasks(missing));
    }
  }
}

Status CoordinationClient::Shutdown(Deadline deadline) {
  StopHeartbeat();  // a finished task is no longer watched; stop before telling the chief
  ShutdownRequest req;
  req.set_task(impl_->options.task);
  ShutdownResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(ToSystemDeadline(Deadline::Min(deadline, Deadline::After(impl_->options.rpc_timeout))));
  impl_->Authorize(&ctx, method::kShutdown, req);
  RT_RETURN_IF_ERROR(FromGrpcStatus(impl_->Stub()->Shutdown(&ctx, req, &resp), impl_->address(), "Shutdown"));
  RT_LOG(INFO) << impl_->options.task << " told the chief it is shutting down";
  return Status::Ok();
}

}  // namespace ringtrain::coordination
