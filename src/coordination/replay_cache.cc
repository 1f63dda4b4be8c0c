#include "coordination/replay_cache.h"

#include <algorithm>

namespace ringtrain::coordination {

void ReplayCache::ExpireLocked(int64_t now_ms) {
  const int64_t oldest_valid = now_ms - window_.count();
  while (!by_time_.empty() && by_time_.begin()->first < oldest_valid) {
    seen_.erase(by_time_.begin()->second);
    by_time_.erase(by_time_.begin());
  }
}

bool ReplayCache::Admit(std::string_view nonce, int64_t token_ms, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  ExpireLocked(now_ms);
  if (token_ms <= floor_ms_) return false;
  std::string key(nonce);
  if (seen_.count(key) > 0) return false;
  if (capacity_ == 0) return false;
  while (seen_.size() >= capacity_) {
    auto oldest = by_time_.begin();
    floor_ms_ = std::max(floor_ms_, oldest->first);
    seen_.erase(oldest->second);
    by_time_.erase(oldest);
  }
  if (token_ms <= floor_ms_) return false;
  seen_.insert(key);
  by_time_.emplace(token_ms, std::move(key));
  return true;
}

size_t ReplayCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_.size();
}

}  // namespace ringtrain::coordination
