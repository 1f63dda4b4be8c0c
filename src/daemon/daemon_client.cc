#include "daemon/daemon_client.h"

#include <mutex>

#include <grpcpp/grpcpp.h>

#include "coordination/call_auth.h"
#include "coordination/grpc_status.h"
#include "daemon/daemon_server.h"
#include "proto/daemon.grpc.pb.h"

namespace ringtrain::daemon {

namespace {
using namespace daemonrpc;  // NOLINT: the service's messages
constexpr char kService[] = "the chief's daemon";
}  // namespace

struct DaemonClient::Impl {
  explicit Impl(const DaemonClientOptions& o) : options(o) { Reset(); }

  // A fresh channel: a refused connection leaves gRPC's channel backing off for up to
  // its reconnect backoff, and a poll should reach a daemon that has just come up.
  void Reset() {
    auto fresh_channel = coordination::MakeChannel(options.address, options.tls);
    auto fresh = DaemonService::NewStub(fresh_channel);
    std::lock_guard<std::mutex> lock(mu);
    channel = std::move(fresh_channel);
    stub = std::move(fresh);
  }
  std::shared_ptr<DaemonService::Stub> Stub() const {
    std::lock_guard<std::mutex> lock(mu);
    return stub;
  }

  // Prepares one call of `method` carrying `request`: its deadline and its proof.
  void Prepare(grpc::ClientContext* ctx, const char* method, const google::protobuf::MessageLite& request) const {
    ctx->set_deadline(std::chrono::system_clock::now() + options.timeout);
    ctx->set_wait_for_ready(options.wait_for_ready);
    if (!options.cluster_secret.configured()) return;
    ctx->AddMetadata(coordination::kAuthMetadataKey,
                     coordination::MakeAuthToken(options.cluster_secret, options.caller, method,
                                                 request.SerializeAsString(), coordination::UnixMillisNow()));
  }
  Status Convert(const grpc::Status& s, const char* rpc) const {
    if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && !Connected()) {
      // A wait-for-ready call whose daemon never listened: unreachable, not hung.
      const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(options.timeout).count();
      const std::string detail = "nothing answered within " + std::to_string(seconds) + " s; --timeout_s waits longer";
      const grpc::Status unreachable(grpc::StatusCode::UNAVAILABLE, detail);
      return coordination::FromGrpcStatus(unreachable, options.address, rpc, kService);
    }
    return coordination::FromGrpcStatus(s, options.address, rpc, kService);
  }
  bool Connected() const {
    std::lock_guard<std::mutex> lock(mu);
    return channel && channel->GetState(false) == GRPC_CHANNEL_READY;
  }

  DaemonClientOptions options;
  mutable std::mutex mu;
  std::shared_ptr<grpc::Channel> channel;     // guarded by mu
  std::shared_ptr<DaemonService::Stub> stub;  // guarded by mu
};

DaemonClient::DaemonClient(const DaemonClientOptions& options) : impl_(std::make_unique<Impl>(options)) {}
DaemonClient::~DaemonClient() = default;

void DaemonClient::Reconnect() { impl_->Reset(); }

StatusOr<int64_t> DaemonClient::Submit(const std::string& name, const std::string& job_text) {
  SubmitRequest req;
  req.set_name(name);
  req.set_job_text(job_text);
  SubmitResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, method::kSubmit, req);
  RT_RETURN_IF_ERROR(impl_->Convert(impl_->Stub()->Submit(&ctx, req, &resp), "Submit"));
  return resp.id();
}

StatusOr<std::string> DaemonClient::ListJobs() {
  ListJobsRequest req;
  ListJobsResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, method::kListJobs, req);
  RT_RETURN_IF_ERROR(impl_->Convert(impl_->Stub()->ListJobs(&ctx, req, &resp), "ListJobs"));
  return resp.jobs_json();
}

StatusOr<std::string> DaemonClient::Cancel(int64_t id) {
  CancelRequest req;
  req.set_id(id);
  CancelResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, method::kCancel, req);
  RT_RETURN_IF_ERROR(impl_->Convert(impl_->Stub()->Cancel(&ctx, req, &resp), "Cancel"));
  return resp.state();
}

StatusOr<LogChunk> DaemonClient::JobLog(int64_t id, int64_t offset) {
  JobLogRequest req;
  req.set_id(id);
  req.set_offset(offset);
  JobLogResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, method::kJobLog, req);
  RT_RETURN_IF_ERROR(impl_->Convert(impl_->Stub()->JobLog(&ctx, req, &resp), "JobLog"));
  return LogChunk{std::move(*resp.mutable_data()), resp.size(), resp.state()};
}

StatusOr<Assignment> DaemonClient::Poll(int64_t running_job, const std::vector<ChildOutcome>& outcomes,
                                        std::chrono::milliseconds wait) {
  PollRequest req;
  req.set_task(impl_->options.caller);
  req.set_running_job(running_job);
  req.set_wait_ms(static_cast<uint32_t>(std::max<int64_t>(0, wait.count())));
  for (const ChildOutcome& o : outcomes) {
    auto* p = req.add_outcomes();
    p->set_job_id(o.job_id);
    p->set_exit_code(o.exit_code);
    p->set_error(o.error);
    p->set_metrics_json(o.metrics_json);
  }
  PollResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx, method::kPoll, req);
  if (wait.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + impl_->options.timeout + wait);
  RT_RETURN_IF_ERROR(impl_->Convert(impl_->Stub()->Poll(&ctx, req, &resp), "Poll"));
  return Assignment{resp.job_id(), std::move(*resp.mutable_job_text()), resp.attempt(), resp.stop()};
}

}  // namespace ringtrain::daemon
