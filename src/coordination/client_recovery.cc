// CoordinationClient's recovery half: the heartbeat thread that turns the service's
// answers into ClusterEvents, and Rendezvous for a new generation (which survives a
// restarting chief). The rest of the client is in coordination_client.cc.
#include <algorithm>
#include <optional>
#include <thread>

#include "common/logging.h"
#include "coordination/client_impl.h"
#include "coordination/coordination_client.h"
#include "coordination/coordination_service.h"
#include "coordination/grpc_status.h"
#include "coordination/service_state.h"

namespace ringtrain::coordination {

using namespace client_internal;  // NOLINT: the client's own helpers

const char* ToString(ClusterEvent::Kind kind) {
  switch (kind) {
    case ClusterEvent::Kind::kGenerationBroken: return "generation broken";
    case ClusterEvent::Kind::kChiefLost: return "chief lost";
    case ClusterEvent::Kind::kServiceRestarted: return "coordination service restarted";
    case ClusterEvent::Kind::kEvicted: return "evicted";
  }
  return "unknown";
}

StatusOr<RendezvousResult> CoordinationClient::Rendezvous(int64_t last_generation, const std::string& reason,
                                                          Deadline deadline, milliseconds log_every) {
  log_every = std::max(log_every, milliseconds(100));
  Clock::time_point next_log = Clock::now() + log_every;
  milliseconds backoff(50);
  std::string summary;      // the last answer's missing tasks, for messages
  std::string unreachable;  // the last transport error, when the last call failed with one
  RT_LOG(INFO) << impl_->options.task << " arrives for "
               << (last_generation < 0 ? std::string("its first generation")
                                       : "the generation after " + std::to_string(last_generation))
               << (reason.empty() ? "" : " (" + reason + ")");
  while (true) {
    auto until_log = std::chrono::duration_cast<milliseconds>(next_log - Clock::now());
    milliseconds wait = std::clamp(std::min({deadline.remaining(), kMaxPollWait, until_log}), milliseconds(0),
                                   kMaxPollWait);
    RendezvousRequest req;
    req.set_task(impl_->options.task);
    req.set_incarnation(impl_->options.incarnation);
    req.set_last_generation(last_generation);
    req.set_wait_ms(static_cast<uint32_t>(wait.count()));
    req.set_reason(reason);
    RendezvousResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(impl_->PollDeadline(wait)));
    impl_->Authorize(&ctx, method::kRendezvous, req);
    grpc::Status s = impl_->Stub()->Rendezvous(&ctx, req, &resp);

    if (s.ok()) {
      unreachable.clear();
      backoff = milliseconds(50);
      if (resp.formed() || resp.job_finished()) {
        RendezvousResult result;
        result.job_finished = resp.job_finished();
        if (resp.formed()) {
          result.generation = resp.generation();
          impl_->last_generation.store(resp.generation());
          RT_LOG(INFO) << impl_->options.task << " is in generation " << resp.generation() << " of "
                       << resp.num_tasks() << " tasks";
        }
        return result;
      }
      std::vector<std::string> missing = ToVector(resp.missing_tasks());
      summary = std::to_string(missing.size()) + " of " + std::to_string(resp.num_tasks()) +
                " tasks: " + JoinTasks(missing);
    } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
               s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
               s.error_code() == grpc::StatusCode::CANCELLED) {
      // The chief may be restarting: retry on a fresh channel until the deadline. (CANCELLED:
      // the chief shut its service down while this call waited, e.g. it was preempted.)
      unreachable = s.error_message();
      std::this_thread::sleep_for(std::min(backoff, deadline.remaining()));
      backoff = std::min(backoff * 2, milliseconds(500));
      impl_->ResetChannel();
    } else if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      RT_LOG(WARNING) << "the chief's coordination service at " << impl_->address() << " does not know "
                      << impl_->options.task << " (it restarted?): registering again";
      std::string job;
      {
        std::lock_guard<std::mutex> lock(impl_->stub_mu);
        job = impl_->job_json;
      }
      RT_RETURN_IF_ERROR(impl_->RegisterUntil(job, deadline));
      summary = "the chief's coordination service to accept " + impl_->options.task + " again";
      // Arrives again at once (after the deadline check below).
    } else {
      return FromGrpcStatus(s, impl_->address(), "Rendezvous");  // ABORTED: this process must exit
    }

    if (deadline.expired()) {
      if (!unreachable.empty()) {
        return DeadlineExceededError("generation after " + std::to_string(last_generation) +
                                     " was not formed before the deadline: the chief's coordination service at " +
                                     impl_->address() + " was unreachable (" + unreachable +
                                     "); check that the chief is running or being restarted");
      }
      return DeadlineExceededError("generation after " + std::to_string(last_generation) +
                                   " was not formed before the deadline; still waiting for " + summary +
                                   "; restart them with the same TF_CONFIG, or check that they can reach the chief");
    }
    if (Clock::now() >= next_log) {
      if (unreachable.empty()) {
        RT_LOG(INFO) << "waiting to form the generation after " << last_generation << " for " << summary;
      } else {
        RT_LOG(INFO) << "waiting for the chief at " << impl_->address() << " (" << unreachable << ")";
      }
      next_log = Clock::now() + log_every;
    }
  }
}

std::string CoordinationClient::Impl::FindSuccessor(milliseconds per_candidate) {
  for (const auto& [task, candidate] : options.successors) {
    if (task == options.task) {
      if (!become_coordinator_tried) {
        become_coordinator_tried = true;
        Status st = options.become_coordinator ? options.become_coordinator() : InternalError("no coordinator hook");
        if (st.ok()) return candidate;
        RT_LOG(ERROR) << options.task << " cannot take over the coordination service at " << candidate << ": "
                      << st.message();
      }
      continue;
    }
    const Clock::time_point until = Clock::now() + per_candidate;
    while (Clock::now() < until) {
      {
        std::lock_guard<std::mutex> lock(hb_mu);
        if (hb_stop) return "";  // the task is leaving: StopHeartbeat must not wait out the probes
      }
      if (ServiceAnswersAt(options, candidate, milliseconds(300))) {
        RT_LOG(WARNING) << options.task << ": the coordination service continues at " << task << " (" << candidate
                        << ")";
        return candidate;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
  return "";
}

bool ServiceAnswersAt(const ClientOptions& options, const std::string& address, milliseconds timeout) {
  auto stub = CoordinationService::NewStub(MakeChannel(address, options.tls));
  HeartbeatRequest req;
  req.set_task(options.task);
  req.set_incarnation(options.incarnation);
  HeartbeatResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(ToSystemDeadline(Deadline::After(timeout)));
  if (options.cluster_secret.configured()) {
    ctx.AddMetadata(kAuthMetadataKey, MakeAuthToken(options.cluster_secret, options.task, method::kHeartbeat,
                                                    req.SerializeAsString(), UnixMillisNow()));
  }
  const grpc::StatusCode code = stub->Heartbeat(&ctx, req, &resp).error_code();
  // Any answer (an unknown task is FAILED_PRECONDITION) is a service there.
  return code != grpc::StatusCode::UNAVAILABLE && code != grpc::StatusCode::DEADLINE_EXCEEDED;
}

void CoordinationClient::StartHeartbeat(milliseconds interval, milliseconds timeout,
                                        std::function<void(const ClusterEvent&)> on_event) {
  StopHeartbeat();
  std::lock_guard<std::mutex> lock(impl_->hb_mu);
  impl_->hb_stop = false;
  impl_->hb_thread = std::thread([impl = impl_.get(), interval, timeout, cb = std::move(on_event)]() mutable {
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
  // From on_event (the heartbeat thread itself) the loop just ends; the owner's
  // later StopHeartbeat() or destructor joins it.
  if (impl_->hb_thread.joinable() && impl_->hb_thread.get_id() != std::this_thread::get_id()) {
    impl_->hb_thread.join();
  }
}

void CoordinationClient::SetProgressSource(ProgressSource source) {
  std::lock_guard<std::mutex> lock(impl_->hb_mu);
  impl_->progress = std::move(source);
}

int64_t CoordinationClient::last_known_generation() const { return impl_->last_generation.load(); }
double CoordinationClient::straggler_score() const { return impl_->straggler_score.load(); }

void CoordinationClient::Impl::HeartbeatLoop(milliseconds interval, milliseconds timeout,
                                             std::function<void(const ClusterEvent&)> on_event) {
  // Any answer from the service (even a refusal) proves the chief is there.
  Clock::time_point last_contact = Clock::now();
  bool chief_lost = false;         // reported for the current outage
  bool service_restarted = false;  // reported since the last successful heartbeat
  int64_t reported_broken = -1;    // the newest generation reported broken
  std::unique_lock<std::mutex> lock(hb_mu);
  while (!hb_stop) {
    HeartbeatRequest req;
    req.set_task(options.task);
    req.set_incarnation(options.incarnation);
    if (progress) {
      // The source only copies under its own lock (it never waits on this one).
      if (progress(req.mutable_progress())) {
        req.mutable_progress()->set_generation(last_generation.load());
      } else {
        req.clear_progress();
      }
    }
    HeartbeatResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(ToSystemDeadline(Deadline::After(std::min(options.rpc_timeout, timeout))));
    Authorize(&ctx, method::kHeartbeat, req);
    hb_call = &ctx;
    lock.unlock();
    grpc::Status s = Stub()->Heartbeat(&ctx, req, &resp);
    lock.lock();
    hb_call = nullptr;
    if (hb_stop) break;

    std::optional<ClusterEvent> event;
    std::vector<std::string> adopt;
    grpc::StatusCode code = s.error_code();
    if (s.ok()) {
      adopt.assign(resp.adopt().begin(), resp.adopt().end());
      last_contact = Clock::now();
      chief_lost = false;
      service_restarted = false;
      last_generation.store(resp.generation());
      straggler_score.store(resp.straggler_score() > 0 ? resp.straggler_score() : 1.0);
      if (resp.generation_broken() && resp.generation() > reported_broken) {
        reported_broken = resp.generation();
        event = ClusterEvent{ClusterEvent::Kind::kGenerationBroken, resp.generation(),
                             "generation " + std::to_string(resp.generation()) + " is broken: " +
                                 resp.broken_reason()};
      }
    } else if (code == grpc::StatusCode::ABORTED) {
      event = ClusterEvent{ClusterEvent::Kind::kEvicted, -1, FromGrpcStatus(s, address(), "Heartbeat").message()};
    } else if (code == grpc::StatusCode::FAILED_PRECONDITION) {
      last_contact = Clock::now();
      chief_lost = false;
      if (!service_restarted) {
        service_restarted = true;
        event = ClusterEvent{ClusterEvent::Kind::kServiceRestarted, -1,
                             "the chief's coordination service at " + address() + " no longer knows " + options.task +
                                 " (the chief restarted): " + s.error_message()};
      }
    } else {
      // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED (the server went away mid-call) or an
      // unexpected answer: transient until it lasts longer than the timeout.
      auto silent = std::chrono::duration_cast<milliseconds>(Clock::now() - last_contact);
      if (silent > timeout && !chief_lost && !options.successors.empty()) {
        const std::string lost = address();
        lock.unlock();
        const std::string next = FindSuccessor(timeout);
        lock.lock();
        if (hb_stop) break;
        if (!next.empty()) {
          SwitchTo(next);
          if (options.on_coordinator) options.on_coordinator(next);
          last_contact = Clock::now();
          event = ClusterEvent{ClusterEvent::Kind::kChiefLost, -1,
                               "lost the coordination service at " + lost + " for " + std::to_string(silent.count()) +
                                   " ms; it continues at " + next + " (elastic chief succession)"};
        }
      }
      if (!event && silent > timeout && !chief_lost) {
        chief_lost = true;
        event = ClusterEvent{ClusterEvent::Kind::kChiefLost, -1,
                             "lost contact with the chief's coordination service at " + address() + " for " +
                                 std::to_string(silent.count()) + " ms (heartbeat timeout " +
                                 std::to_string(timeout.count()) + " ms): " + s.error_message()};
      }
    }
    if (!adopt.empty() && options.on_adopt) {
      lock.unlock();
      for (const auto& t : adopt) options.on_adopt(t);
      lock.lock();
    }
    if (event) {
      if (event->kind == ClusterEvent::Kind::kGenerationBroken) {
        // INFO: the chief's recovery says it once for the console (recovery/training_run.cc).
        RT_LOG(INFO) << options.task << ": " << event->message;
      } else {
        RT_LOG(ERROR) << options.task << ": " << ToString(event->kind) << ": " << event->message;
      }
      lock.unlock();
      on_event(*event);
      lock.lock();
      // An evicted process has nothing left to say to the chief.
      if (event->kind == ClusterEvent::Kind::kEvicted) break;
    }
    // Keep heartbeating after other events: this task is alive, and the chief should
    // not declare it failed while it recovers.
    hb_cv.wait_for(lock, interval, [this] { return hb_stop; });
  }
}

}  // namespace ringtrain::coordination
