// The handlers of the coordination service, whose calls reach them through
// service_front.h (which has already checked the caller's proof and address and parsed
// the request). Handlers never block. Long polls (KvGet, Barrier, Rendezvous) that
// cannot be answered at once are parked in a list and answered when a state change
// satisfies them or their wait (capped at kMaxPollWait) passes; a timer thread handles
// expiry and heartbeat failure detection.
//
// Threading: handlers run on gRPC's callback threads; state is guarded by mu_.
// PendingCall::Answer is never called with mu_ held.
// Lifetime: owned by CoordinationServer; must outlive the grpc::Server whose calls it
// answers. Stop() before destroying the grpc::Server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "common/deadline.h"
#include "common/status.h"
#include <grpcpp/support/status.h>

#include "coordination/generic_call.h"
#include "coordination/service_state.h"
#include "coordination/status_board.h"
#include "proto/coordination.pb.h"

namespace ringtrain::coordination {

// The longest the server holds a long poll; the client polls again until its deadline.
inline constexpr std::chrono::milliseconds kMaxPollWait{2000};
// The largest message either side of the coordination service accepts (gRPC's default
// is 4 MiB). A Register call carries the whole job (the job reader's bound is 16 MiB),
// so a valid job file is never refused for its size; anything larger is refused by gRPC
// before it is read in full.
inline constexpr int kMaxMessageBytes = 32 << 20;

// Each handler fills the response it was given and answers the call
// (generic_call.h's PendingCall) exactly once, from any thread; the call (and its
// response) live until then.
class CoordinationServiceImpl final {
 public:
  // Rows GetStatus adds after the training tasks' (tasks outside the ring: the evaluator).
  // Called outside the service's lock, once per GetStatus; it must not block for long.
  using StatusExtras = std::function<void(GetStatusResponse*)>;

  CoordinationServiceImpl(ServiceState state, std::chrono::milliseconds heartbeat_timeout, StatusBoard board,
                          StatusExtras status_extras = nullptr);
  ~CoordinationServiceImpl();  // Stop()s; never throws

  void StartTimer();
  // Finishes every parked long poll with UNAVAILABLE, answers later ones the same way,
  // and joins the timer thread. Idempotent; returns promptly.
  void Stop();
  // Blocks until every expected task called Shutdown, the deadline passes, or Stop().
  Status WaitForShutdown(Deadline deadline);

  void Register(const RegisterRequest& req, RegisterResponse* resp, PendingCall* call);
  void KvSet(const KvSetRequest& req, KvSetResponse* resp, PendingCall* call);
  void KvGet(const KvGetRequest& req, KvGetResponse* resp, PendingCall* call);
  void Barrier(const BarrierRequest& req, BarrierResponse* resp, PendingCall* call);
  void Heartbeat(const HeartbeatRequest& req, HeartbeatResponse* resp, PendingCall* call);
  void Shutdown(const ShutdownRequest& req, ShutdownResponse* resp, PendingCall* call);
  void Rendezvous(const RendezvousRequest& req, RendezvousResponse* resp, PendingCall* call);
  // Answered at once from the state and the status board (never parked).
  void GetStatus(const GetStatusRequest& req, GetStatusResponse* resp, PendingCall* call);

 private:
  using Clock = std::chrono::steady_clock;
  class FinishList;
  // Fills the poll's response under mu_. Returns true when the call may be answered;
  // with expired == true it must fill a "not yet" answer and return true.
  using PollCheck = std::function<bool(bool expired)>;
  struct ParkedPoll {
    PendingCall* call;
    Clock::time_point expiry;
    PollCheck check;
  };

  // Answers the poll now if `check` allows, else parks it. Requires mu_.
  void PollLocked(PendingCall* call, uint32_t wait_ms, PollCheck check, FinishList* finish);
  // After a state change: answers every parked poll that is now satisfied. Requires mu_.
  void WakePollsLocked(FinishList* finish);
  void DetectFailuresLocked(Clock::time_point now);
  // Extends every task's heartbeat deadline by the time this process did not run.
  void DiscountOwnAbsenceLocked(Clock::time_point now);
  void TimerLoop();
  // Tells the status board the generation's state after a change. Requires mu_.
  void NoteGenerationLocked();

  const std::chrono::milliseconds heartbeat_timeout_;
  const std::chrono::milliseconds failure_check_period_;
  // When failures were last checked (guarded by mu_): a gap much longer than the
  // period is time this process did not run (DetectFailuresLocked).
  std::optional<Clock::time_point> last_check_;
  std::mutex mu_;
  std::condition_variable timer_cv_;     // wakes the timer: new poll or Stop()
  std::condition_variable shutdown_cv_;  // wakes WaitForShutdown
  ServiceState state_;                   // guarded by mu_
  StatusBoard board_;                    // guarded by mu_
  const StatusExtras status_extras_;
  std::list<ParkedPoll> parked_;         // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  std::thread timer_;
};

}  // namespace ringtrain::coordination
