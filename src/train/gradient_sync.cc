#include "train/gradient_sync.h"

#include <algorithm>

namespace ringtrain::train {

GradientSync::GradientSync(collective::Communicator* comm, float* grads, size_t n, size_t bytes_per_pack,
                           std::chrono::milliseconds timeout)
    : comm_(comm), grads_(grads), timeout_(timeout) {
  const size_t per_pack = bytes_per_pack == 0 ? n : std::max<size_t>(1, bytes_per_pack / sizeof(float));
  for (size_t end = n; end > 0;) {
    size_t begin = end > per_pack ? end - per_pack : 0;
    packs_.emplace_back(begin, end);
    end = begin;
  }
  thread_ = std::thread([this] { Loop(); });
}

GradientSync::~GradientSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // The thread is either idle or inside one collective, which has its own deadline.
  if (thread_.joinable()) thread_.join();
}

void GradientSync::BeginStep() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = 0;
  done_ = 0;
  error_ = Status::Ok();
}

void GradientSync::Ready(size_t offset) {
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (released_ < packs_.size() && packs_[released_].first >= offset) {
      ++released_;
      more = true;
    }
  }
  if (more) cv_.notify_all();
}

Status GradientSync::WaitDone(std::unique_lock<std::mutex>& lock, size_t target) {
  size_t seen = done_;
  while (done_ < target) {
    // Bounded: the deadline restarts whenever a pack completes.
    if (!cv_.wait_for(lock, timeout_, [&] { return done_ != seen; })) {
      return DeadlineExceededError("gradient all-reduce made no progress for " + std::to_string(timeout_.count()) +
                                   " ms (pack " + std::to_string(done_ + 1) + " of " + std::to_string(packs_.size()) +
                                   ")");
    }
    seen = done_;
  }
  return Status::Ok();
}

Status GradientSync::Finish() {
  Ready(0);
  auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  RT_RETURN_IF_ERROR(WaitDone(lock, packs_.size()));
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return error_;
}

Status GradientSync::AllReduceInline(float* data, size_t n) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    RT_RETURN_IF_ERROR(WaitDone(lock, released_));
    if (!error_.ok()) return error_;
  }
  Status st = comm_->AllReduce(data, n, collective::ReduceOp::kSum);
  if (!st.ok()) {
    st = st.WithContext("all-reduce of synchronized batch statistics");
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = st;  // the remaining packs are skipped, as after a failed pack
  }
  return st;
}

void GradientSync::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || done_ < released_; });
    if (stop_) return;
    const auto [begin, end] = packs_[done_];
    bool failed = !error_.ok();
    lock.unlock();
    // After a failure the communicator is broken; the remaining packs are skipped.
    Status st = failed ? Status::Ok() : comm_->AllReduce(grads_ + begin, end - begin, collective::ReduceOp::kSum);
    lock.lock();
    if (!st.ok() && error_.ok()) {
      error_ = st.WithContext("all-reduce of gradient pack " + std::to_string(done_ + 1) + " of " +
                              std::to_string(packs_.size()));
    }
    ++done_;
    cv_.notify_all();
  }
}

}  // namespace ringtrain::train
