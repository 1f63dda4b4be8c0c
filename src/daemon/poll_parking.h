// Idle daemons' polls held by the chief's daemon until there may be work for them, so a
// submitted job starts at once instead of at the daemons' next poll (less time from submit
// to first step). A parked poll is answered when Wake() is called (a job was submitted,
// started or ended) or when its wait ends, whichever is first; Stop() answers them all.
//
// Threading: every method may be called from any thread. Answers run on the caller of
// Wake/Stop or on the timer thread, never under the lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace ringtrain::daemon {

class PollParking {
 public:
  using Clock = std::chrono::steady_clock;
  // Polls the board again and answers the held call; run exactly once.
  using Answer = std::function<void()>;

  PollParking() = default;
  PollParking(const PollParking&) = delete;
  PollParking& operator=(const PollParking&) = delete;
  ~PollParking();  // Stop(); never throws

  // Holds `answer` for up to `wait`. False once stopping: the caller answers at once.
  bool Park(std::chrono::milliseconds wait, Answer answer);
  // Answers every held poll now.
  void Wake();
  // Answers every held poll and joins the timer; later Parks return false. Idempotent.
  void Stop();

 private:
  struct Held {
    Clock::time_point expiry;
    Answer answer;
  };
  void TimerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::list<Held> held_;  // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread timer_;      // started by the first Park
};

}  // namespace ringtrain::daemon
