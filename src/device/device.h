// What this binary was built with (CUDA, cuDNN, NCCL), what the machine has at run
// time (driver, GPUs), and where a worker's model runs: the job's "device" field
// ("auto" | "cpu" | "gpu") resolved against both.
//
// Always built; without CUDA at build time every query answers "absent" / no GPUs.
// Nothing here needs a GPU or a driver: without one, Runtime() says why in
// unavailable_reason and Place() puts "auto" on the CPU.
//
// Threading: every function may be called from any thread; Runtime() asks CUDA once
// per process and caches the answer.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::device {

// ---------------------------------------------------------------- build time
struct BuildInfo {
  std::string cuda;     // toolkit version, e.g. "13.0.88"; empty: built without CUDA
  std::string cudnn;    // e.g. "9.19.0"; empty: without cuDNN
  std::string nccl;     // e.g. "2.28.9"; empty: without NCCL
  bool gpu_engine = false;  // the GPU training engine is built (CUDA + cuBLAS + cuDNN)
};
const BuildInfo& Build();
// "CUDA 13.0.88, cuDNN 9.19.0, NCCL 2.28.9" or, per missing part, "CUDA: absent" etc.
std::string BuildSummary();

// ---------------------------------------------------------------- run time
struct Gpu {
  int ordinal = 0;          // as CUDA numbers it under CUDA_VISIBLE_DEVICES
  std::string name;         // "NVIDIA H200"
  double memory_gib = 0;
  int compute_major = 0, compute_minor = 0;
  std::string pci_bus_id;   // "0000:17:00.0"
};
struct RuntimeInfo {
  int driver_version = 0;           // CUDA's encoding (13000 = 13.0); 0: no driver
  std::vector<Gpu> gpus;            // usable GPUs; empty without a driver or a GPU build
  std::string unavailable_reason;   // why gpus is empty: "built without CUDA", "no CUDA driver is installed", ...
  // Versions of the libraries loaded at run time ("" when not built in): cudart, cuDNN, NCCL.
  std::string cuda_runtime, cudnn_runtime, nccl_runtime;
};
const RuntimeInfo& Runtime();
// The version of the cuBLAS library this process loads ("13.1.0"); "" when not built in or
// not loadable. cuBLAS is loaded on first use (device/cublas_loader.h), so this loads it:
// about 0.4 s, which Runtime() does not spend (every worker asks it).
std::string CublasRuntimeVersion();
// "13.0" for CUDA's driver/runtime encoding (major*1000 + minor*10); "none" for 0.
std::string CudaVersionText(int encoded);

// ---------------------------------------------------------------- placement
enum class DeviceKind { kAuto, kCpu, kGpu };
// "auto" | "cpu" | "gpu", case-insensitive; INVALID_ARGUMENT naming the choices.
StatusOr<DeviceKind> ParseDeviceKind(const std::string& text);
const char* DeviceKindName(DeviceKind kind);  // "auto", "cpu", "gpu"

struct Placement {
  bool gpu = false;
  int ordinal = -1;    // the CUDA device when gpu
  std::string reason;  // one line: "GPU 0 (NVIDIA H200) for local rank 0 of 1 visible GPU(s)",
                       // "no CUDA driver is installed: training on the CPU", "the job asks for the CPU"
};
// kCpu: the CPU. kAuto: GPU local_rank % gpus when the GPU engine is built and a GPU is
// usable, else the CPU (reason says why). kGpu: like auto, but FAILED_PRECONDITION
// saying why there is no GPU and what to do ("set \"device\": \"auto\" or \"cpu\"").
StatusOr<Placement> Place(DeviceKind kind, int local_rank);
// Place's decision as a pure function of what was built and what was found, so that
// it can be tested with fabricated infos on a machine without a GPU. Place(k, r) is
// PlaceOn(Build(), Runtime(), k, r). A negative local_rank counts as 0.
StatusOr<Placement> PlaceOn(const BuildInfo& build, const RuntimeInfo& runtime, DeviceKind kind, int local_rank);

// This process's rank among the workers on its machine: LOCAL_RANK, then
// SLURM_LOCALID, then OMPI_COMM_WORLD_LOCAL_RANK when set to a non-negative integer,
// else `fallback` (the worker derives it from TF_CONFIG's hosts).
int LocalRank(int fallback);

}  // namespace ringtrain::device
