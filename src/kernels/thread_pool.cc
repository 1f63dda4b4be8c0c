#include "kernels/thread_pool.h"

namespace ringtrain::kernels {
namespace {

void Range(int64_t n, int parts, int index, int64_t* begin, int64_t* end) {
  *begin = n * index / parts;
  *end = n * (index + 1) / parts;
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ParallelFor(int64_t n, RangeFn fn, void* ctx) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    fn(ctx, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  int64_t begin, end;
  Range(n, size(), 0, &begin, &end);
  if (begin < end) fn(ctx, begin, end);
  std::unique_lock<std::mutex> lock(mu_);
  // No deadline: the workers run finite compute on this process's own data.
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  fn_ = nullptr;
  ctx_ = nullptr;
}

void ThreadPool::Loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    RangeFn fn;
    void* ctx;
    int64_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      ctx = ctx_;
      n = n_;
    }
    int64_t begin, end;
    Range(n, size(), index, &begin, &end);
    if (begin < end) fn(ctx, begin, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace ringtrain::kernels
