// The collective-communication interface every backend implements, and the factory
// that picks a backend at run time (CommunicationImplementation: AUTO, RING, NCCL).
//
// Data: every collective takes a buffer, an element count and a DataType (data_type.h:
// float32, float64, int32, int64, uint8), as NCCL does; the typed conveniences below
// (comm->AllReduce(totals, 3, ReduceOp::kSum) with a double* or int64_t*) fill the type
// in. kSum on integers wraps modulo 2^bits; kMean on integers is INVALID_ARGUMENT.
// Results are bit-identical on every rank, and across runs with the same sizes; RING's
// all-reduce adds in one order on every transport (sum_order.h), NCCL in its own.
//
// Threading: one thread at a time may call the collective operations of a
// Communicator (they are issued in the same order on every rank). Abort() may be
// called from any thread at any time, e.g. by a heartbeat watcher.
// Blocking: every operation returns within the communicator's timeout; a dead or
// hung peer makes it fail with an error that names the peer.
// Errors: a bad argument (null buffer with count > 0, root out of range, unknown type,
// kMean on an integer type, a byte size that overflows size_t) is INVALID_ARGUMENT,
// found before anything is sent, and leaves this rank's communicator usable (ranks that
// did issue the collective then fail on their own: timeout or mismatch). Any other
// failure breaks it: every later operation returns that first failure at once
// (ABORTED: reason once Abort() was called).
// Buffers: host memory, unless accepts_device_memory() (NCCL): then device pointers on
// its rank's GPU go straight to the backend, and host pointers are staged through the
// GPU (two extra copies) so that the same calling code works on every backend.
// (communicator_base.h holds what every backend shares: the checks and the abort and
// broken state; reduce.h the one reduction routine.)
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "collective/data_type.h"
#include "common/status.h"
#include "security/cluster_secret.h"
#include "store/store.h"

namespace ringtrain::collective {

enum class ReduceOp { kSum, kMean };
enum class Implementation { kAuto, kRing, kNccl };
// How RING reaches its peers: kAuto uses shared memory when every rank is on this
// host (same boot, same network namespace) and TCP otherwise; kTcp forces TCP.
enum class Transport { kAuto, kTcp };

// "AUTO" | "RING" | "NCCL" (case-insensitive).
StatusOr<Implementation> ParseImplementation(const std::string& name);
const char* ImplementationName(Implementation impl);

class Communicator {
 public:
  virtual ~Communicator() = default;  // closes connections; never throws, never blocks for long

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "RING", "NCCL", "LOCAL": for logs and reports. Code decides by capabilities
  // (accepts_device_memory), never by this name.
  virtual const char* backend_name() const = 0;
  // True when device pointers (on this rank's GPU) go straight to the backend, so a GPU
  // trainer should hand it its device gradients; false: host memory only.
  virtual bool accepts_device_memory() const { return false; }

  // In place: data[0..count) becomes the element-wise sum (or mean) over all ranks.
  virtual Status AllReduce(void* data, size_t count, DataType type, ReduceOp op) = 0;
  // data[0..count) on every rank becomes root's data.
  virtual Status Broadcast(void* data, size_t count, DataType type, int root) = 0;
  // out[r*count .. (r+1)*count) becomes rank r's in[0..count). out holds count*size()
  // elements; in may be this rank's block of out.
  virtual Status AllGather(const void* in, size_t count, DataType type, void* out) = 0;
  // Returns once every rank has entered the barrier.
  virtual Status Barrier() = 0;
  // Makes every in-flight and later operation fail promptly with ABORTED: reason. The
  // first reason stays; later calls change nothing.
  virtual void Abort(const std::string& reason) = 0;

  // Typed conveniences: T is float, double, int32_t, int64_t or uint8_t (DataTypeOf).
  template <typename T>
  Status AllReduce(T* data, size_t count, ReduceOp op) {
    return AllReduce(static_cast<void*>(data), count, DataTypeOf<T>(), op);
  }
  template <typename T>
  Status Broadcast(T* data, size_t count, int root) {
    return Broadcast(static_cast<void*>(data), count, DataTypeOf<T>(), root);
  }
  template <typename T>
  Status AllGather(const T* in, size_t count, T* out) {
    return AllGather(static_cast<const void*>(in), count, DataTypeOf<T>(), static_cast<void*>(out));
  }
};

// "sum" | "mean".
const char* ReduceOpName(ReduceOp op);

struct CommunicatorOptions {
  Implementation implementation = Implementation::kAuto;
  // Deadline for each collective operation and for connection set-up.
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  // The host (name or address) this rank listens on for data-plane connections;
  // peers connect to it. For TF_CONFIG clusters it is the task's own host.
  std::string listen_host = "127.0.0.1";
  // Ring: size of a pipelined chunk in bytes.
  size_t chunk_bytes = 1 << 18;
  // RING's transport (RINGTRAIN_TRANSPORT=tcp forces TCP in the worker).
  Transport transport = Transport::kAuto;
  // The GPU this rank trains on (its gradients live there), kCpuRank when it trains on
  // the CPU, or kGpuByLocalRank (the default): GPU local_index % GPUs, where local_index
  // counts the lower ranks on this machine. AUTO picks NCCL only when every rank has a
  // GPU and no two ranks on one machine share one (NCCL refuses that); NCCL then runs
  // on this GPU.
  static constexpr int kGpuByLocalRank = -2;
  static constexpr int kCpuRank = -1;
  int gpu_device = kGpuByLocalRank;
  // When configured, every TCP data-plane connection starts with a mutual
  // challenge-response on it before any tensor is accepted; a connection that fails it
  // is closed and logged once, and set-up goes on waiting for the real peer.
  security::ClusterSecret cluster_secret;
};

// Creates a communicator for `rank` of `size` ranks. Every rank first publishes its
// host identity and GPU count in the store; AUTO then resolves to NCCL when this build
// has NCCL and every rank has a GPU, else RING, and RING uses shared memory when all
// ranks share this host (unless options.transport is kTcp). The choice and its reason
// are logged. Endpoints are exchanged through
// `store` (not owned; must outlive the call) under keys of its own; callers that
// build several communicators pass a PrefixStore per communicator.
// Blocks until all ranks are connected or options.timeout passes.
StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(const CommunicatorOptions& options, int rank,
                                                           int size, store::Store* store);

}  // namespace ringtrain::collective
