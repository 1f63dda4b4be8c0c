#include "store/store.h"

namespace ringtrain::store {

Status InMemoryStore::Set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
  }
  cv_.notify_all();
  return Status::Ok();
}

StatusOr<std::string> InMemoryStore::Get(const std::string& key, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  bool found = cv_.wait_until(lock, deadline.when(), [&] { return values_.count(key) > 0; });
  if (!found) return DeadlineExceededError("store key '" + key + "' was not set before the deadline");
  return values_[key];
}

}  // namespace ringtrain::store
