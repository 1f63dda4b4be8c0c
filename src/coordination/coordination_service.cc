#include "coordination/coordination_service.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "coordination/grpc_status.h"

namespace ringtrain::coordination {
namespace {

const grpc::Status kShuttingDown(grpc::StatusCode::UNAVAILABLE,
                                 "the chief's coordination service is shutting down");

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// Calls to answer once mu_ is released: answering may run gRPC callbacks, which must not
// run under our lock. Declare one before taking the lock so it is destroyed after it.
class CoordinationServiceImpl::FinishList {
 public:
  FinishList() = default;
  FinishList(const FinishList&) = delete;
  FinishList& operator=(const FinishList&) = delete;
  ~FinishList() {
    for (auto& [call, status] : items_) call->Answer(status);
  }
  void Add(PendingCall* call, grpc::Status status = grpc::Status::OK) { items_.emplace_back(call, std::move(status)); }

 private:
  std::vector<std::pair<PendingCall*, grpc::Status>> items_;
};

CoordinationServiceImpl::CoordinationServiceImpl(ServiceState state, std::chrono::milliseconds heartbeat_timeout,
                                                 StatusBoard board, StatusExtras status_extras)
    : heartbeat_timeout_(heartbeat_timeout),
      failure_check_period_(std::clamp(heartbeat_timeout / 4, std::chrono::milliseconds(10),
                                       std::chrono::milliseconds(1000))),
      state_(std::move(state)),
      board_(std::move(board)),
      status_extras_(std::move(status_extras)) {}

CoordinationServiceImpl::~CoordinationServiceImpl() { Stop(); }

void CoordinationServiceImpl::StartTimer() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!timer_.joinable() && !stopping_) timer_ = std::thread([this] { TimerLoop(); });
}

void CoordinationServiceImpl::Stop() {
  {
    FinishList finish;
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& poll : parked_) finish.Add(poll.call, kShuttingDown);
    parked_.clear();
  }
  timer_cv_.notify_all();
  shutdown_cv_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
}

Status CoordinationServiceImpl::WaitForShutdown(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  shutdown_cv_.wait_until(lock, deadline.when(),
                          [&] { return stopping_ || state_.MissingShutdowns().empty(); });
  std::vector<std::string> missing = state_.MissingShutdowns();
  if (missing.empty()) return Status::Ok();
  if (stopping_) return UnavailableError("the coordination service was stopped while waiting for tasks to shut down");
  return DeadlineExceededError(std::to_string(missing.size()) + " of " + std::to_string(state_.expected_tasks().size()) +
                               " tasks did not shut down before the deadline: " + JoinTasks(missing));
}

void CoordinationServiceImpl::PollLocked(PendingCall* call, uint32_t wait_ms, PollCheck check,
                                         FinishList* finish) {
  if (stopping_) {
    finish->Add(call, kShuttingDown);
    return;
  }
  auto wait = std::min(std::chrono::milliseconds(wait_ms), kMaxPollWait);
  if (check(/*expired=*/wait.count() == 0)) {
    finish->Add(call);
    return;
  }
  parked_.push_back({call, Clock::now() + wait, std::move(check)});
  timer_cv_.notify_all();  // the timer may need to wake earlier
}

void CoordinationServiceImpl::WakePollsLocked(FinishList* finish) {
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->check(/*expired=*/false)) {
      finish->Add(it->call);
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

void CoordinationServiceImpl::DetectFailuresLocked(Clock::time_point now) {
  DiscountOwnAbsenceLocked(now);
  for (const auto& f : state_.DetectFailures(now)) {
    RT_LOG(WARNING) << "declaring " << f.task << " failed: " << f.reason;
    board_.AddEvent("failure", f.task, f.task + " failed: " + f.reason, UnixNow());
  }
  NoteGenerationLocked();
}

void CoordinationServiceImpl::NoteGenerationLocked() {
  board_.OnGeneration(state_.generation(), state_.generation_broken(), state_.broken_reason(), UnixNow());
}

void CoordinationServiceImpl::DiscountOwnAbsenceLocked(Clock::time_point now) {
  // The timer checks every failure_check_period_. A longer gap since the last check
  // means this process did not run (it was stopped, or starved of CPU) and could not
  // read the heartbeats sent meanwhile: judge liveness on what arrives from now on,
  // not on the service's own silence.
  if (last_check_ && now - *last_check_ > 2 * failure_check_period_) {
    const Clock::duration absent = now - *last_check_ - failure_check_period_;
    state_.DiscountAbsence(absent);
    if (absent > heartbeat_timeout_ / 2) {
      RT_LOG(WARNING) << "the coordination service did not run for "
                      << std::chrono::duration_cast<std::chrono::milliseconds>(absent).count()
                      << " ms (this process was stopped or starved of CPU); the tasks' heartbeat deadlines are "
                         "extended by as much";
    }
  }
  last_check_ = std::max(now, last_check_.value_or(now));
}

void CoordinationServiceImpl::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    Clock::time_point wake = Clock::now() + failure_check_period_;
    for (const auto& poll : parked_) wake = std::min(wake, poll.expiry);
    timer_cv_.wait_until(lock, wake);
    if (stopping_) break;

    Clock::time_point now = Clock::now();
    DetectFailuresLocked(now);
    std::vector<PendingCall*> expired;
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->expiry <= now) {
        it->check(/*expired=*/true);
        expired.push_back(it->call);
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (auto* call : expired) call->Answer(grpc::Status::OK);
      lock.lock();
    }
  }
}

void CoordinationServiceImpl::Register(const RegisterRequest& req, RegisterResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  Status s = state_.Register(req.task(), req.incarnation(), req.job_json());
  if (!s.ok()) {
    RT_LOG(WARNING) << "refused registration of '" << req.task() << "': " << s.message();
  } else if (state_.MissingRegistrations().empty()) {
    WakePollsLocked(&finish);
  }
  NoteGenerationLocked();  // a restarted member breaks its generation
  finish.Add(call, ToGrpcStatus(s));
}

void CoordinationServiceImpl::KvSet(const KvSetRequest& req, KvSetResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  state_.KvSet(req.key(), req.value());
  WakePollsLocked(&finish);
  finish.Add(call);
}

void CoordinationServiceImpl::KvGet(const KvGetRequest& req, KvGetResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  PollLocked(call, req.wait_ms(), [this, key = req.key(), resp](bool expired) {
    std::optional<std::string> value = state_.KvGet(key);
    resp->set_found(value.has_value());
    if (value) resp->set_value(std::move(*value));
    return resp->found() || expired;
  }, &finish);
}

void CoordinationServiceImpl::Barrier(const BarrierRequest& req, BarrierResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  Status s = state_.ArriveAtBarrier(req.name(), req.task());
  if (!s.ok()) {
    finish.Add(call, ToGrpcStatus(s));
    return;
  }
  WakePollsLocked(&finish);  // this arrival may complete the barrier for the others
  PollLocked(call, req.wait_ms(), [this, name = req.name(), resp](bool expired) {
    std::vector<std::string> missing = state_.MissingAtBarrier(name);
    resp->set_num_tasks(static_cast<uint32_t>(state_.expected_tasks().size()));
    resp->set_passed(missing.empty());
    resp->clear_missing_tasks();
    for (auto& t : missing) resp->add_missing_tasks(std::move(t));
    return resp->passed() || expired;
  }, &finish);
}

void CoordinationServiceImpl::Heartbeat(const HeartbeatRequest& req, HeartbeatResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  Clock::time_point now = Clock::now();
  DiscountOwnAbsenceLocked(now);  // before this heartbeat counts, so that it is not moved
  Status s = state_.Heartbeat(req.task(), req.incarnation(), now);
  if (s.ok() && req.has_progress()) board_.OnProgress(req.task(), req.progress(), UnixNow());
  if (s.ok()) {
    DetectFailuresLocked(now);  // do not wait for the timer to notice
    for (const auto& f : state_.failed_tasks()) {
      FailedTask* out = resp->add_failed_tasks();
      out->set_task(f.task);
      out->set_reason(f.reason);
    }
    resp->set_generation(state_.generation());
    resp->set_generation_broken(state_.generation_broken());
    if (state_.generation_broken()) resp->set_broken_reason(state_.broken_reason());
    resp->set_straggler_score(board_.StragglerScore(req.task()));
    for (auto& t : state_.AdoptionsFor(req.task(), now)) resp->add_adopt(std::move(t));
  }
  finish.Add(call, ToGrpcStatus(s));
}

void CoordinationServiceImpl::Shutdown(const ShutdownRequest& req, ShutdownResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  Status s = state_.Shutdown(req.task());
  if (s.ok()) {
    RT_LOG(INFO) << req.task() << " shut down; still running: "
                 << (state_.MissingShutdowns().empty() ? "none" : JoinTasks(state_.MissingShutdowns()));
    shutdown_cv_.notify_all();
    WakePollsLocked(&finish);  // the job is finished: parked rendezvous calls learn it now
  }
  finish.Add(call, ToGrpcStatus(s));
}

void CoordinationServiceImpl::Rendezvous(const RendezvousRequest& req, RendezvousResponse* resp, PendingCall* call) {
  FinishList finish;
  std::lock_guard<std::mutex> lock(mu_);
  Status s = state_.ArriveAtRendezvous(req.task(), req.incarnation(), req.last_generation(), req.reason());
  if (!s.ok()) {
    finish.Add(call, ToGrpcStatus(s));
    return;
  }
  // This arrival may have formed the generation: every parked rendezvous is answered.
  NoteGenerationLocked();
  WakePollsLocked(&finish);
  PollLocked(call, req.wait_ms(),
             [this, task = req.task(), last = req.last_generation(), resp](bool expired) {
               RendezvousInfo info = state_.RendezvousStatus(task, last);
               resp->set_num_tasks(static_cast<uint32_t>(state_.expected_tasks().size()));
               resp->set_formed(info.formed);
               resp->set_generation(info.generation);
               resp->set_job_finished(info.job_finished);
               resp->clear_missing_tasks();
               for (auto& t : info.missing) resp->add_missing_tasks(std::move(t));
               return info.formed || info.job_finished || expired;
             },
             &finish);
}

void CoordinationServiceImpl::GetStatus(const GetStatusRequest& req, GetStatusResponse* resp, PendingCall* call) {
  (void)req;
  FinishList finish;  // answers after the extras are in
  {
    std::lock_guard<std::mutex> lock(mu_);
    board_.Fill(state_, Clock::now(), UnixNow(), resp);
  }
  if (status_extras_) status_extras_(resp);
  finish.Add(call);
}

}  // namespace ringtrain::coordination
