// Gradient packing with overlap (TensorFlow's bytes_per_pack, Horovod's fusion
// buffer): the gradient buffer is cut into packs of bytes_per_pack, from its end,
// because backward finishes the last layers first. Each pack is all-reduced (sum) on
// a communication thread as soon as backward has produced it, while backward goes on.
//
// Packs are reduced one at a time in a fixed order, so every rank issues the same
// collectives in the same order and the result is deterministic for a given
// bytes_per_pack. The communicator is used by the communication thread only between
// BeginStep() and Finish(); the caller may use it itself outside that window.
//
// Threading: BeginStep/Ready/Finish are called by the training thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "collective/communicator.h"
#include "common/status.h"

namespace ringtrain::train {

class GradientSync {
 public:
  // grads[0..n) is the model's gradient buffer (not owned). bytes_per_pack 0: one pack.
  // timeout bounds Finish()'s wait for progress (each collective has its own deadline too).
  GradientSync(collective::Communicator* comm, float* grads, size_t n, size_t bytes_per_pack, std::chrono::milliseconds timeout);
  ~GradientSync();  // stops and joins the thread; never throws
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  void BeginStep();
  // grads[offset..n) are final; releases every pack that lies inside them.
  void Ready(size_t offset);
  // Waits until every pack of this step is reduced; the first error, if any.
  Status Finish();
  // A collective of the training thread's own in the middle of a step (synchronized
  // BatchNormalization's statistics): waits until the packs released so far are reduced
  // (the communication thread is then idle: only the training thread releases packs),
  // then sums data[0..n) over the ranks on this thread. Every rank releases the same packs
  // before the same call, so the collectives stay in one order everywhere. Bounded as
  // Finish(); the step's first error, if any.
  Status AllReduceInline(float* data, size_t n);

  size_t num_packs() const { return packs_.size(); }
  // Seconds Finish() spent waiting for communication, summed over all steps.
  double wait_seconds() const { return wait_seconds_; }

 private:
  void Loop();
  // Waits (holding `lock` on mu_) until `target` packs are reduced, the deadline restarting
  // whenever one completes.
  Status WaitDone(std::unique_lock<std::mutex>& lock, size_t target);

  collective::Communicator* comm_;
  float* grads_;
  std::chrono::milliseconds timeout_;
  std::vector<std::pair<size_t, size_t>> packs_;  // [begin, end), last part of the buffer first
  double wait_seconds_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  size_t released_ = 0;  // packs handed to the thread this step; guarded by mu_
  size_t done_ = 0;      // packs reduced this step; guarded by mu_
  Status error_;         // the step's first error; guarded by mu_
  bool stop_ = false;    // guarded by mu_
  std::thread thread_;
};

}  // namespace ringtrain::train
