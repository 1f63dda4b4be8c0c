#include "daemon/poll_parking.h"

#include <vector>

namespace ringtrain::daemon {

PollParking::~PollParking() { Stop(); }

bool PollParking::Park(std::chrono::milliseconds wait, Answer answer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return false;
  if (!timer_.joinable()) timer_ = std::thread([this] { TimerLoop(); });
  held_.push_back({Clock::now() + wait, std::move(answer)});
  cv_.notify_all();  // the timer may have to wake earlier
  return true;
}

void PollParking::Wake() {
  std::list<Held> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    due.swap(held_);
  }
  for (Held& h : due) h.answer();
}

void PollParking::Stop() {
  std::list<Held> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    due.swap(held_);
  }
  cv_.notify_all();
  for (Held& h : due) h.answer();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
}

void PollParking::TimerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    Clock::time_point wake = Clock::now() + std::chrono::seconds(1);
    for (const Held& h : held_) wake = std::min(wake, h.expiry);
    cv_.wait_until(lock, wake);
    const Clock::time_point now = Clock::now();
    std::vector<Answer> due;
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->expiry <= now) {
        due.push_back(std::move(it->answer));
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
    if (due.empty()) continue;
    lock.unlock();
    for (Answer& a : due) a();
    lock.lock();
  }
}

}  // namespace ringtrain::daemon
