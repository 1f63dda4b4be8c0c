// Where a worker's model runs: the job's "device" against what was built and found.
#include <cctype>
#include <climits>
#include <cstdlib>
#include <string>

#include "device/device.h"

namespace ringtrain::device {
namespace {

// Why this binary cannot train on a GPU whatever the machine has; "" when it can.
std::string BuildGap(const BuildInfo& build) {
  if (build.gpu_engine) return "";
  if (build.cuda.empty()) return "this ringtrain was built without CUDA";
  return "this ringtrain was built without the GPU engine (CUDA " + build.cuda +
         " was found, but not nvcc, cuBLAS and cuDNN together)";
}

// Parses a non-negative decimal int; -1 for anything else (empty, sign, junk, overflow).
int ParseLocalRank(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  long long v = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (!std::isdigit(static_cast<unsigned char>(*p))) return -1;
    v = v * 10 + (*p - '0');
    if (v > INT_MAX) return -1;
  }
  return static_cast<int>(v);
}

}  // namespace

StatusOr<DeviceKind> ParseDeviceKind(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "auto") return DeviceKind::kAuto;
  if (lower == "cpu") return DeviceKind::kCpu;
  if (lower == "gpu") return DeviceKind::kGpu;
  return InvalidArgumentError("unknown device \"" + text + "\": use \"auto\" (a GPU when one is usable, else the "
                              "CPU), \"cpu\" or \"gpu\"");
}

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kAuto: return "auto";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
  }
  return "auto";
}

StatusOr<Placement> PlaceOn(const BuildInfo& build, const RuntimeInfo& runtime, DeviceKind kind, int local_rank) {
  Placement p;
  if (kind == DeviceKind::kCpu) {
    p.reason = "the job asks for the CPU";
    return p;
  }
  if (const std::string gap = BuildGap(build); !gap.empty()) {
    if (kind == DeviceKind::kAuto) {
      p.reason = gap + ": training on the CPU";
      return p;
    }
    return FailedPreconditionError(
        "the job asks for \"device\": \"gpu\" but " + gap +
        "; rebuild it where the CUDA toolkit (with nvcc and cuBLAS) and cuDNN are installed (configure with "
        "-DRINGTRAIN_CUDA=ON to insist on them), or set \"device\": \"auto\" or \"cpu\"");
  }
  if (runtime.gpus.empty()) {
    const std::string why = runtime.unavailable_reason.empty() ? "no CUDA GPU is visible" : runtime.unavailable_reason;
    if (kind == DeviceKind::kAuto) {
      p.reason = why + ": training on the CPU";
      return p;
    }
    return FailedPreconditionError("the job asks for \"device\": \"gpu\" but no CUDA GPU is usable (" + why +
                                   "); run it on a machine with a GPU and its driver, or set \"device\": \"auto\" "
                                   "or \"cpu\"");
  }
  // Workers sharing a machine take different GPUs; with one visible GPU per process
  // (CUDA_VISIBLE_DEVICES set per worker) every worker takes its GPU 0.
  const int n = static_cast<int>(runtime.gpus.size());
  const int rank = local_rank < 0 ? 0 : local_rank;
  const Gpu& gpu = runtime.gpus[static_cast<size_t>(rank % n)];
  p.gpu = true;
  p.ordinal = gpu.ordinal;
  p.reason = "GPU " + std::to_string(gpu.ordinal) + " (" + gpu.name + ") for local rank " + std::to_string(rank) +
             " of " + std::to_string(n) + " visible GPU(s)";
  return p;
}

StatusOr<Placement> Place(DeviceKind kind, int local_rank) {
  // The CPU needs no CUDA query: a CPU job never touches the runtime.
  if (kind == DeviceKind::kCpu) return PlaceOn(Build(), RuntimeInfo{}, kind, local_rank);
  return PlaceOn(Build(), Runtime(), kind, local_rank);
}

int LocalRank(int fallback) {
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    const int v = ParseLocalRank(std::getenv(name));
    if (v >= 0) return v;
  }
  return fallback;
}

}  // namespace ringtrain::device
