// A point in time by which a blocking call must return. Every blocking call in
// ringtrain takes one; there is no "wait forever".
#pragma once

#include <chrono>

namespace ringtrain {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline After(std::chrono::milliseconds d) { return Deadline(Clock::now() + d); }
  static Deadline AfterSeconds(double s) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
  }
  static Deadline At(Clock::time_point t) { return Deadline(t); }

  Clock::time_point when() const { return when_; }
  bool expired() const { return Clock::now() >= when_; }
  // Time left, never negative.
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when_ - Clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  }
  // Milliseconds left as an int suitable for poll(2): 0 when expired, capped at INT32_MAX.
  int remaining_ms_for_poll() const {
    auto ms = remaining().count();
    return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  // The earlier of two deadlines.
  static Deadline Min(Deadline a, Deadline b) { return a.when_ < b.when_ ? a : b; }

 private:
  explicit Deadline(Clock::time_point t) : when_(t) {}
  Clock::time_point when_;
};

}  // namespace ringtrain
