#include "daemon/daemon_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "coordination/call_guard.h"
#include "coordination/generic_call.h"
#include "coordination/grpc_status.h"
#include "daemon/job_files.h"
#include "daemon/poll_parking.h"
#include "env/env.h"
#include "proto/daemon.pb.h"

namespace ringtrain::daemon {
namespace {

using coordination::PendingCall;
using coordination::ToGrpcStatus;
using namespace daemonrpc;  // NOLINT: the service's messages

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The longest a poll is held (PollRequest.wait_ms).
constexpr std::chrono::milliseconds kMaxPollWait{2000};

}  // namespace

// The service's classes have a name space of their own, not the anonymous one: a member
// of DaemonServer::Impl of an anonymous-namespace type makes gcc warn when this file is
// part of a unity source (-Wsubobject-linkage).
namespace internal {

// The handlers: each answers at once, but an idle daemon's poll, which may be parked.
class DaemonServiceImpl {
 public:
  DaemonServiceImpl(JobBoard* board, std::string jobs_dir) : board_(board), jobs_dir_(std::move(jobs_dir)) {}

  void Submit(const SubmitRequest& req, SubmitResponse* resp, PendingCall* call) {
    auto id = board_->Submit(req.name(), req.job_text(), UnixNow());
    if (id.ok()) resp->set_id(*id);
    call->Answer(ToGrpcStatus(id.status()));
    WakeIfChanged();
  }

  // Answers the parked polls (before the server stops).
  void StopParking() { parking_.Stop(); }

  void ListJobs(const ListJobsRequest&, ListJobsResponse* resp, PendingCall* call) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const jobqueue::JobRecord& r : board_->List()) {
      nlohmann::json j = jobqueue::RecordToJson(r);
      j.erase("job");
      jobs.push_back(std::move(j));
    }
    resp->set_jobs_json(nlohmann::json{{"jobs", jobs}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    call->Answer(grpc::Status::OK);
  }

  void Cancel(const CancelRequest& req, CancelResponse* resp, PendingCall* call) {
    auto state = board_->Cancel(req.id(), UnixNow());
    if (state.ok()) resp->set_state(jobqueue::JobStateName(*state));
    call->Answer(ToGrpcStatus(state.status()));
    WakeIfChanged();
  }

  void JobLog(const JobLogRequest& req, JobLogResponse* resp, PendingCall* call) {
    std::optional<jobqueue::JobRecord> job = board_->Get(req.id());
    if (!job) {
      call->Answer(grpc::Status(grpc::StatusCode::NOT_FOUND, "there is no job-" + std::to_string(req.id())));
      return;
    }
    resp->set_state(jobqueue::JobStateName(job->state));
    auto text = env::Default()->ReadFile(JobOutputPath(jobs_dir_, req.id()));
    if (text.ok()) {  // no file yet: the job has not started on this daemon
      const int64_t size = static_cast<int64_t>(text->size());
      const int64_t from = std::clamp<int64_t>(req.offset(), 0, size);
      resp->set_size(size);
      resp->set_data(text->substr(from, std::min<int64_t>(kMaxLogChunk, size - from)));
    }
    call->Answer(grpc::Status::OK);
  }

  void Poll(const PollRequest& req, PollResponse* resp, PendingCall* call) {
    std::vector<ChildOutcome> outcomes;
    for (const auto& o : req.outcomes()) {
      outcomes.push_back({o.job_id(), o.exit_code(), o.error(), o.metrics_json()});
    }
    const uint64_t before = board_->changes();
    auto a = board_->Poll(req.task(), req.running_job(), outcomes, std::chrono::steady_clock::now(), UnixNow());
    WakeIfChanged();
    // Nothing new for a daemon without a child: no job, or one it has reported on.
    const bool idle = a.ok() && req.running_job() == 0 &&
                      (a->job_id == 0 || std::any_of(outcomes.begin(), outcomes.end(),
                                                     [&](const ChildOutcome& o) { return o.job_id == a->job_id; }));
    const auto wait = std::min(std::chrono::milliseconds(req.wait_ms()), kMaxPollWait);
    if (idle && wait.count() > 0) {
      // Polled again when woken: the outcomes were taken by this poll.
      if (parking_.Park(wait, [this, task = req.task(), resp, call] {
            auto again = board_->Poll(task, 0, {}, std::chrono::steady_clock::now(), UnixNow());
            Fill(again, resp);
            call->Answer(ToGrpcStatus(again.status()));
          })) {
        // A change between the board's answer and the parking woke nobody: wake now.
        if (board_->changes() != before) parking_.Wake();
        return;
      }
    }
    Fill(a, resp);
    call->Answer(ToGrpcStatus(a.status()));
  }

 private:
  static void Fill(const StatusOr<Assignment>& a, PollResponse* resp) {
    if (!a.ok()) return;
    resp->set_job_id(a->job_id);
    resp->set_job_text(a->job_text);
    resp->set_attempt(a->attempt);
    resp->set_stop(a->stop);
  }

  // Wakes the parked polls when the board moved (a job submitted, started or ended).
  void WakeIfChanged() {
    const uint64_t now = board_->changes();
    if (seen_changes_.exchange(now) != now) parking_.Wake();
  }

  JobBoard* const board_;
  const std::string jobs_dir_;
  std::atomic<uint64_t> seen_changes_{0};
  PollParking parking_;
};

class DaemonFront final : public grpc::CallbackGenericService {
 public:
  DaemonFront(DaemonServiceImpl* service, coordination::CallGuardOptions guard)
      : service_(service), guard_(std::move(guard)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    using S = DaemonServiceImpl;
    using coordination::MakeUnaryCall;
    const std::string& m = ctx->method();
    if (m == method::kSubmit) return MakeUnaryCall(ctx, method::kSubmit, &guard_, service_, &S::Submit);
    if (m == method::kListJobs) return MakeUnaryCall(ctx, method::kListJobs, &guard_, service_, &S::ListJobs);
    if (m == method::kCancel) return MakeUnaryCall(ctx, method::kCancel, &guard_, service_, &S::Cancel);
    if (m == method::kJobLog) return MakeUnaryCall(ctx, method::kJobLog, &guard_, service_, &S::JobLog);
    if (m == method::kPoll) return MakeUnaryCall(ctx, method::kPoll, &guard_, service_, &S::Poll);
    if (m == coordination::kHealthCheckMethod) return coordination::AnswerServing();
    return new coordination::AnswerUnread(
        grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "the chief's daemon serves no method " + m));
  }

 private:
  DaemonServiceImpl* const service_;
  coordination::CallGuard guard_;
};

}  // namespace internal

struct DaemonServer::Impl {
  std::string address;
  int port = 0;
  std::unique_ptr<internal::DaemonServiceImpl> service;
  std::unique_ptr<internal::DaemonFront> front;
  std::unique_ptr<grpc::Server> server;
  std::mutex stop_mu;
  bool stopped = false;
};

DaemonServer::DaemonServer() : impl_(std::make_unique<Impl>()) {}

DaemonServer::~DaemonServer() { Stop(); }

StatusOr<std::unique_ptr<DaemonServer>> DaemonServer::Start(const DaemonServerOptions& options) {
  if (options.board == nullptr) return InvalidArgumentError("the daemon server needs a job board");
  std::unique_ptr<DaemonServer> server(new DaemonServer());
  Impl& impl = *server->impl_;
  coordination::CallGuardOptions guard;
  guard.secret = options.cluster_secret;
  guard.cluster_hosts = options.cluster_hosts;
  guard.check_peer_address = options.check_peer_address;
  impl.service = std::make_unique<internal::DaemonServiceImpl>(options.board, options.jobs_dir);
  impl.front = std::make_unique<internal::DaemonFront>(impl.service.get(), std::move(guard));
  coordination::ListeningServer listening =
      coordination::StartGenericServer(options.address, options.bind_all, options.tls, impl.front.get());
  if (!listening.server) {
    return UnavailableError("cannot listen on " + listening.address +
                            ": address in use or not local; check that no other daemon runs there and that the "
                            "chief's TF_CONFIG address names this machine");
  }
  impl.server = std::move(listening.server);
  impl.port = listening.port;
  impl.address = listening.address;
  RT_LOG(INFO) << "job queue service listening on " << impl.address
               << (options.cluster_secret.configured() ? ", cluster secret " + options.cluster_secret.Fingerprint()
                                                       : std::string(", no cluster secret"));
  return server;
}

void DaemonServer::Stop() {
  if (!impl_) return;
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->stopped) return;
  impl_->stopped = true;
  if (impl_->service) impl_->service->StopParking();
  if (impl_->server) impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
}

int DaemonServer::port() const { return impl_->port; }

}  // namespace ringtrain::daemon
