#include "task_host.h"

#include "common/exit_policy.h"
#include "common/logging.h"

namespace ringtrain::cli {

TaskHost::~TaskHost() {
  try {
    Wait();
  } catch (...) {
    // A destructor never throws; the threads were joined or are beyond help.
  }
}

void TaskHost::Start(int rank, bool adopted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || threads_.count(rank)) return;
  if (adopted) RT_LOG(WARNING) << "hosting training task " << rank << " (its virtual rank) for its absent process";
  if (!adopted) ++own_running_;
  std::thread t([this, rank, adopted] {
    const int code = run_(rank, adopted);
    std::lock_guard<std::mutex> lock(mu_);
    if (adopted) {
      RT_LOG(WARNING) << "no longer hosting training task " << rank << " (exit code " << code
                      << (code == 0 ? ")" : "; its own process took it back, or the job ended)");
    } else {
      own_codes_.push_back(code);
      if (--own_running_ == 0) closed_ = true;
    }
    auto it = threads_.find(rank);
    if (it != threads_.end()) {
      ended_.push_back(std::move(it->second));
      threads_.erase(it);
    }
    changed_.notify_all();
  });
  threads_.emplace(rank, std::move(t));
}

int TaskHost::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::vector<std::thread> ended = std::move(ended_);
    ended_.clear();
    lock.unlock();
    for (auto& t : ended) t.join();
    lock.lock();
    if (ended_.empty() && threads_.empty()) break;
    changed_.wait(lock, [this] { return !ended_.empty() || threads_.empty(); });
  }
  closed_ = true;
  std::vector<int> failures;
  for (int c : own_codes_) {
    if (c != 0) failures.push_back(c);
  }
  return RootCauseExit(failures);
}

}  // namespace ringtrain::cli
