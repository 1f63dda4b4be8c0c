// A fixed pool of threads for the kernels: ParallelFor splits [0, n) into one
// contiguous range per thread (the caller's thread takes the first) and returns when
// all are done. Ranges depend only on n and the thread count; the kernels split over
// output elements, so results do not depend on the split.
//
// Threading: one caller at a time (the training thread). Between calls, workers spin
// for a few microseconds (a step issues many short calls back to back) and then sleep
// on a condition variable; the caller spins likewise before sleeping. The destructor stops and joins them; it never throws.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <type_traits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ringtrain::kernels {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
  // fn(ctx, begin, end) for disjoint ranges covering [0, n); runs inline when n is 1,
  // the pool has one thread, or another thread is using the pool (several trainers in
  // one process, as in tests: the results are the same either way). (A plain function pointer, not std::function: the
  // AVX-512 files must not instantiate inline library code other files could share.)
  void ParallelFor(int64_t n, RangeFn fn, void* ctx);

 private:
  void Loop(int index);

  std::vector<std::thread> workers_;
  std::mutex caller_mu_;  // held by the thread whose ParallelFor is running
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  RangeFn fn_ = nullptr;                                        // guarded by mu_
  void* ctx_ = nullptr;                                         // guarded by mu_
  int64_t n_ = 0;                                               // guarded by mu_
  // Written under mu_, also read without it by spinning threads.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  bool stop_ = false;                                           // guarded by mu_
};

// The process-wide pool kernels.h's SetNumThreads sizes. Shared: a pool replaced by
// SetNumThreads lives on until its last caller is done with it.
std::shared_ptr<ThreadPool> Pool();

// fn(ctx, begin, end) over [0, n) on the process-wide pool (out of line, so that the
// AVX-512 files instantiate no shared_ptr code).
void ParallelForRaw(int64_t n, ThreadPool::RangeFn fn, void* ctx);

// f(begin, end) over [0, n) on the process-wide pool.
template <typename F>
void ParallelFor(int64_t n, F&& f) {
  using Fn = std::remove_reference_t<F>;
  ParallelForRaw(
      n, [](void* ctx, int64_t begin, int64_t end) { (*static_cast<Fn*>(ctx))(begin, end); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace ringtrain::kernels
