#include "kernels/thread_pool.h"

#include <chrono>

namespace ringtrain::kernels {
namespace {

// How long a thread spins before it sleeps: long enough to bridge the gaps between
// the kernels of one step, short enough not to steal a core between steps.
constexpr auto kSpin = std::chrono::microseconds(50);

template <typename Pred>
bool SpinFor(Pred ready) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      __builtin_ia32_pause();
    }
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

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
  std::unique_lock<std::mutex> caller(caller_mu_, std::try_to_lock);
  if (workers_.empty() || n == 1 || !caller.owns_lock()) {
    fn(ctx, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    pending_.store(static_cast<int>(workers_.size()));
    generation_.fetch_add(1);
  }
  start_cv_.notify_all();
  int64_t begin, end;
  Range(n, size(), 0, &begin, &end);
  if (begin < end) fn(ctx, begin, end);
  SpinFor([this] { return pending_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  // No deadline: the workers run finite compute on this process's own data.
  done_cv_.wait(lock, [this] { return pending_.load() == 0; });
  fn_ = nullptr;
  ctx_ = nullptr;
}

void ThreadPool::Loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    RangeFn fn;
    void* ctx;
    int64_t n;
    SpinFor([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
      fn = fn_;
      ctx = ctx_;
      n = n_;
    }
    int64_t begin, end;
    Range(n, size(), index, &begin, &end);
    if (begin < end) fn(ctx, begin, end);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.fetch_sub(1) == 1) done_cv_.notify_one();
    }
  }
}

}  // namespace ringtrain::kernels
