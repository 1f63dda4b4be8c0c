// A device backend: where a model's ops (ops/op.h) run. The executor
// (executor/executor.h) walks a model's graph the same way on every backend; a backend
// says which ops it runs (Supports), makes one kernel per node (NewKernel), owns memory
// on its device (Allocate, Copy) and sums the executor's gradient contributions.
//
// Two implementations, each in its own folder, like Gloo's transports:
//   backends/cpu   the AVX-512 and OpenBLAS kernels (kernels/)
//   backends/cuda  cuDNN, cuBLAS and CUDA kernels (built when CMake finds CUDA)
//
// What each declares it runs is a plain table (DeclaredSupport) that
// docs/reference/devices.md is generated from and a test keeps true.
//
// Threading: one thread drives a backend and its kernels.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backends/kernel.h"
#include "common/status.h"
#include "ops/graph.h"
#include "ops/op.h"

namespace ringtrain::backends {

enum class Device { kCpu, kCuda };
// "cpu", "cuda": the job file's "device" values.
const char* DeviceName(Device device);

// How fully a backend runs one kind of op, for the docs' op x device table.
struct OpSupport {
  ops::OpKind kind;
  enum class Level { kFull, kPartial, kNone } level = Level::kNone;
  // For kPartial and kNone: what it lacks, as the docs show it ("no dilation, no groups");
  // for kFull, anything else the docs should say of it ("not yet run on a GPU").
  std::string note;
};

// Fusions the executor's fusion pass (executor/fusion.h) may ask a backend for.
enum class Fusion {
  // A relu that is the only consumer of a node's output runs inside that node.
  kReluIntoProducer,
  // A node whose output feeds only an Add of two inputs leaves its output to the Add,
  // which computes it in its own pass.
  kProducerIntoAdd,
};

// Memory on one device, freed when the Buffer goes. Move-only.
class Buffer {
 public:
  using Free = void (*)(void* ptr) noexcept;
  Buffer() = default;
  Buffer(void* ptr, size_t bytes, Free free) : ptr_(ptr), bytes_(bytes), free_(free) {}
  ~Buffer() { Reset(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      Reset();
      ptr_ = other.ptr_;
      bytes_ = other.bytes_;
      free_ = other.free_;
      other.ptr_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  float* floats() const { return static_cast<float*>(ptr_); }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void Reset() noexcept {
    if (ptr_ != nullptr && free_ != nullptr) free_(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  Free free_ = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;  // never throws

  virtual Device device() const = 0;
  // One line for the log: "CPU (avx512 kernels, 2 threads)".
  virtual std::string Describe() const = 0;

  // OK when this backend runs `op`; otherwise UNIMPLEMENTED saying what it lacks
  // ("no dilation"), for the executor's one-line refusal.
  virtual Status Supports(const ops::Op& op) const = 0;
  // Whether the fusion pass may apply `fusion` with `producer` on this backend.
  virtual bool CanFuse(Fusion fusion, const ops::Op& producer) const = 0;
  // The kernel for one node (Supports(node.op) is OK).
  virtual StatusOr<std::unique_ptr<Kernel>> NewKernel(const ops::Node& node) = 0;

  // `bytes` of this device's memory (uninitialised); `what` names it in errors.
  virtual StatusOr<Buffer> Allocate(size_t bytes, const std::string& what) = 0;
  // Copies between host memory and this device's, or within this device, in the order
  // of the backend's queued work.
  enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice };
  virtual Status Copy(void* dst, const void* src, size_t bytes, Direction direction) = 0;
  // Waits (bounded) for the work queued so far; `what` names it in a deadline error.
  virtual Status Synchronize(const std::string& what) = 0;

  // The executor's gradient sums, on this device: out = a + b, masked where relu_mask
  // <= 0 when relu_mask is not null (the mask is a fused relu's output); and acc += x.
  virtual Status AddArrays(const float* a, const float* b, const float* relu_mask, size_t n, float* out) = 0;
  virtual Status Accumulate(float* acc, const float* x, size_t n) = 0;
};

// What each backend declares it runs, one entry per ops::AllOpKinds() kind in order:
// the source of docs/reference/devices.md. Plain tables, available without the device.
const std::vector<OpSupport>& CpuDeclaredSupport();
const std::vector<OpSupport>& CudaDeclaredSupport();
// The checks behind them: OK, or UNIMPLEMENTED saying what the device lacks.
Status CudaSupports(const ops::Op& op);

// The op x device table of docs/reference/devices.md (markdown, from the declarations).
std::string DeviceTableMarkdown();

}  // namespace ringtrain::backends
