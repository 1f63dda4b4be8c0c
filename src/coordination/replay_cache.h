// The nonces of the coordination calls the chief has accepted, so that a captured call
// cannot be sent again (call_auth.h). A token is accepted only within kMaxClockSkew of
// the chief's clock, so a nonce need only be remembered until its token's time is more
// than that in the past; older entries are dropped as time goes on.
//
// Bounded: at most `capacity` nonces. When that many unexpired ones are held (only
// holders of the secret can add any), the oldest is dropped and from then on every
// token not newer than it is refused as possibly replayed -- so the bound never lets a
// replay through, at worst it refuses a member's call that was delayed for minutes.
//
// Threading: thread-safe (one mutex); never blocks beyond it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace ringtrain::coordination {

class ReplayCache {
 public:
  ReplayCache(size_t capacity, std::chrono::milliseconds window) : capacity_(capacity), window_(window) {}

  // True the first time `nonce` is presented (with its token's time); false for a nonce
  // seen before or a token not newer than what the bound forced out.
  bool Admit(std::string_view nonce, int64_t token_ms, int64_t now_ms);
  size_t size() const;

 private:
  void ExpireLocked(int64_t now_ms);

  const size_t capacity_;
  const std::chrono::milliseconds window_;
  mutable std::mutex mu_;
  std::unordered_set<std::string> seen_;                // guarded by mu_
  std::set<std::pair<int64_t, std::string>> by_time_;  // the same entries by token time; guarded by mu_
  int64_t floor_ms_ = INT64_MIN;                        // tokens at or before it are refused; guarded by mu_
};

}  // namespace ringtrain::coordination
