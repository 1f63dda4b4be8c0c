// `ringtrain version` / `--version`: what this binary was built with (compile time
// only; it never touches a GPU). `ringtrain info [--json]`: what it finds at run time:
// the CUDA driver, the GPUs, the loaded library versions, the CPU, and where
// "device": "auto" would put a worker. Both exit 0 whatever they find: they report.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "common/exit_codes.h"
#include "device/device.h"
#include "flags.h"
#include "kernels/kernels.h"

namespace ringtrain::cli {
namespace {

// "built with: CUDA 13.0.88, cuDNN 9.19.0, NCCL 2.28.9 (GPU engine: yes); CPU kernels: avx512"
std::string BuildLine() {
  return "built with: " + device::BuildSummary() + " (GPU engine: " + (device::Build().gpu_engine ? "yes" : "no") +
         "); CPU kernels: " + kernels::Implementation();
}

nlohmann::json OrNull(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

std::string Fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// The placement "auto" gives this process, as one line after "device auto -> ".
std::string AutoPlacementLine(const device::Placement& p) {
  if (p.gpu) return p.reason;
  // The reason ends in ": training on the CPU"; "CPU: <why>" says it once.
  std::string why = p.reason;
  const std::string suffix = ": training on the CPU";
  if (why.size() > suffix.size() && why.compare(why.size() - suffix.size(), suffix.size(), suffix) == 0) {
    why.resize(why.size() - suffix.size());
  }
  return "CPU: " + why;
}

nlohmann::json InfoJson(const device::RuntimeInfo& rt, const StatusOr<device::Placement>& placement, int local_rank,
                        const char* visible) {
  const device::BuildInfo& b = device::Build();
  nlohmann::json j;
  j["version"] = RINGTRAIN_VERSION;
  j["build"] = {{"cuda", OrNull(b.cuda)},
                {"cudnn", OrNull(b.cudnn)},
                {"nccl", OrNull(b.nccl)},
                {"gpu_engine", b.gpu_engine},
                {"summary", BuildLine()}};
  j["cuda_driver"] = rt.driver_version > 0 ? nlohmann::json(device::CudaVersionText(rt.driver_version))
                                           : nlohmann::json(nullptr);
  j["cuda_driver_version"] = rt.driver_version;
  j["gpus"] = nlohmann::json::array();
  for (const device::Gpu& g : rt.gpus) {
    j["gpus"].push_back({{"ordinal", g.ordinal},
                         {"name", g.name},
                         {"memory_gib", g.memory_gib},
                         {"compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
                         {"pci_bus_id", g.pci_bus_id}});
  }
  j["gpus_unavailable_reason"] = OrNull(rt.unavailable_reason);
  j["libraries"] = {{"cuda_runtime", OrNull(rt.cuda_runtime)},
                    {"cudnn", OrNull(rt.cudnn_runtime)},
                    {"cublas", OrNull(device::CublasRuntimeVersion())},
                    {"nccl", OrNull(rt.nccl_runtime)}};
  j["cuda_visible_devices"] = visible == nullptr ? nlohmann::json(nullptr) : nlohmann::json(visible);
  j["cpu"] = {{"kernels", kernels::Implementation()},
              {"hardware_threads", std::thread::hardware_concurrency()}};
  nlohmann::json auto_place = {{"device", "auto"}, {"local_rank", local_rank}};
  if (placement.ok()) {
    auto_place["gpu"] = placement->gpu;
    auto_place["ordinal"] = placement->gpu ? nlohmann::json(placement->ordinal) : nlohmann::json(nullptr);
    auto_place["reason"] = placement->reason;
  } else {
    auto_place["error"] = placement.status().message();
  }
  j["placement"] = auto_place;
  return j;
}

void PrintInfoText(const device::RuntimeInfo& rt, const StatusOr<device::Placement>& placement, const char* visible) {
  std::printf("ringtrain %s\n%s\n", RINGTRAIN_VERSION, BuildLine().c_str());
  std::printf("CUDA driver: %s\n", device::CudaVersionText(rt.driver_version).c_str());
  if (rt.gpus.empty()) {
    std::printf("GPUs: none (%s)\n", rt.unavailable_reason.empty() ? "none found" : rt.unavailable_reason.c_str());
  } else {
    std::printf("GPUs: %zu\n", rt.gpus.size());
    for (const device::Gpu& g : rt.gpus) {
      std::printf("  GPU %d: %s, %s GiB, compute capability %d.%d, PCI %s\n", g.ordinal, g.name.c_str(),
                  Fixed1(g.memory_gib).c_str(), g.compute_major, g.compute_minor, g.pci_bus_id.c_str());
    }
  }
  auto lib = [](const char* name, const std::string& v) {
    return std::string(name) + " " + (v.empty() ? "absent" : v);
  };
  std::printf("libraries loaded: %s, %s, %s, %s\n", lib("CUDA runtime", rt.cuda_runtime).c_str(),
              lib("cuDNN", rt.cudnn_runtime).c_str(), lib("cuBLAS", device::CublasRuntimeVersion()).c_str(),
              lib("NCCL", rt.nccl_runtime).c_str());
  if (visible != nullptr) std::printf("CUDA_VISIBLE_DEVICES: \"%s\"\n", visible);
  std::printf("CPU: kernels %s, %u hardware threads\n", kernels::Implementation(),
              std::thread::hardware_concurrency());
  if (placement.ok()) {
    std::printf("device auto -> %s\n", AutoPlacementLine(*placement).c_str());
  } else {
    std::printf("device auto -> error: %s\n", placement.status().message().c_str());
  }
}

}  // namespace

int RunVersion(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return Fail(InvalidArgumentError("`ringtrain version` takes no arguments, got '" + args[0] +
                                     "'; run `ringtrain info` for what this machine has")
                    .About(Subject::kConfig));
  }
  std::printf("ringtrain %s\n%s\n", RINGTRAIN_VERSION, BuildLine().c_str());
  return kExitOk;
}

int RunInfo(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"json"}, {"json"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  const device::RuntimeInfo& rt = device::Runtime();
  const int local_rank = device::LocalRank(0);
  const StatusOr<device::Placement> placement = device::Place(device::DeviceKind::kAuto, local_rank);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (flags->has("json")) {
    // "replace": a GPU name or CUDA_VISIBLE_DEVICES that is not UTF-8 must not throw.
    std::printf("%s\n", InfoJson(rt, placement, local_rank, visible)
                                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                .c_str());
  } else {
    PrintInfoText(rt, placement, visible);
  }
  return kExitOk;
}

}  // namespace ringtrain::cli
