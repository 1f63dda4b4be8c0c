// RAII device memory (cudaMalloc) and pinned host memory (cudaMallocHost) for the GPU
// engine. Move-only; destructors free without throwing (an error is logged: by then
// the GPU is usually broken and the status has already been reported elsewhere).
//
// Freeing device memory that queued work still reads is undefined: callers wait for
// their streams before Grow/Allocate replaces a buffer that is in use. Buffers belong
// to the device current when they were allocated; the owner makes it current again
// before they are freed (the engine's destructor does).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "common/logging.h"
#include "common/status.h"
#include "backends/cuda/cuda_status.h"

namespace ringtrain::gpu {

namespace buffer_internal {
struct DeviceMemory {
  static cudaError_t Alloc(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
  static cudaError_t Free(void* p) { return cudaFree(p); }
  static constexpr const char* kAlloc = "cudaMalloc";
  static constexpr const char* kFree = "cudaFree";
};
struct PinnedMemory {
  static cudaError_t Alloc(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
  static cudaError_t Free(void* p) { return cudaFreeHost(p); }
  static constexpr const char* kAlloc = "cudaMallocHost";
  static constexpr const char* kFree = "cudaFreeHost";
};
}  // namespace buffer_internal

template <typename T, typename Memory>
class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { Reset(); }
  Buffer(Buffer&& other) noexcept : p_(std::exchange(other.p_, nullptr)), n_(std::exchange(other.n_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      Reset();
      p_ = std::exchange(other.p_, nullptr);
      n_ = std::exchange(other.n_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Replaces the buffer with one of n elements (contents undefined). `what` names it
  // in errors, e.g. "parameters".
  Status Allocate(size_t n, const std::string& what, int gpu) {
    Reset();
    if (n == 0) return Status::Ok();
    void* p = nullptr;
    const size_t bytes = n * sizeof(T);
    RT_RETURN_IF_ERROR(CudaCheck(Memory::Alloc(&p, bytes),
                                 std::string(Memory::kAlloc) + "(" + what + ", " + std::to_string(bytes) + " bytes)",
                                 gpu));
    p_ = static_cast<T*>(p);
    n_ = n;
    return Status::Ok();
  }
  // Allocate(n) unless the buffer already holds at least n elements (never shrinks;
  // growing loses the contents).
  Status Grow(size_t n, const std::string& what, int gpu) {
    return n <= n_ ? Status::Ok() : Allocate(n, what, gpu);
  }
  void Reset() noexcept {
    if (p_ == nullptr) return;
    const cudaError_t e = Memory::Free(p_);
    if (e != cudaSuccess) {
      RT_LOG(WARNING) << Memory::kFree << " failed: " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e);
    }
    p_ = nullptr;
    n_ = 0;
  }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
using DeviceBuffer = Buffer<T, buffer_internal::DeviceMemory>;
template <typename T>
using PinnedBuffer = Buffer<T, buffer_internal::PinnedMemory>;

}  // namespace ringtrain::gpu
