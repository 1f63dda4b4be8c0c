// One CUDA GPU as the engine uses it: the device, a compute stream with the cuBLAS and
// cuDNN handles bound to it, and a copy stream for input batches. Also the RAII
// event, and the bounded wait every host-side wait goes through.
//
// Threading: one thread at a time; the thread may change between calls, so callers
// MakeCurrent() at the top of every public method. Blocking: only Wait/SyncCompute,
// each with a deadline. The destructor waits at most a few seconds for queued work,
// then frees; it never throws.
#pragma once

#include <memory>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "common/deadline.h"
#include "common/status.h"

namespace ringtrain::gpu {

// A CUDA event without timing (cheap to record and query). Move-only.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  Status Create(int gpu);
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class GpuContext {
 public:
  // FAILED_PRECONDITION naming the CUDA error when there is no such usable GPU.
  static StatusOr<std::unique_ptr<GpuContext>> Create(int ordinal);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int ordinal() const { return ordinal_; }
  cudaStream_t compute() const { return compute_; }
  cudaStream_t copy() const { return copy_; }
  cublasHandle_t cublas() const { return cublas_; }
  cudnnHandle_t cudnn() const { return cudnn_; }
  // Before Ampere there is no TF32, so cuDNN's DEFAULT math is full FP32 there too.
  bool default_math_is_fp32() const { return compute_major_ < 8; }

  // cudaSetDevice(ordinal): the calling thread's device.
  Status MakeCurrent() const;
  // Polls `event` until it completes, the GPU reports an error, or `deadline` passes
  // (DEADLINE_EXCEEDED saying `what` did not finish).
  Status Wait(cudaEvent_t event, Deadline deadline, const std::string& what) const;
  // Waits (bounded, 300 s) for everything queued on the compute stream so far.
  Status SyncCompute(const std::string& what) const;
  // Waits at most `seconds` for both streams (for owners about to free buffers that
  // queued work may still use); logs instead of failing.
  void Drain(double seconds) const noexcept;

  // "GPU 0: NVIDIA H200 (compute 9.0, 139.8 GiB), cuDNN 9.19.0, cuBLAS 13.0.0".
  std::string Describe() const;

  // How long a host-side wait for one step's GPU work may take.
  static constexpr double kWaitSeconds = 300;

 private:
  explicit GpuContext(int ordinal) : ordinal_(ordinal) {}

  int ordinal_;
  int compute_major_ = 0;
  std::string describe_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  Event sync_;  // recorded by SyncCompute
};

}  // namespace ringtrain::gpu
