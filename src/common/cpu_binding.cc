#include "common/cpu_binding.h"

#include <sched.h>

namespace ringtrain {

StatusOr<CpuBinding> ParseCpuBinding(const std::string& text) {
  if (text == "core") return CpuBinding::kCore;
  if (text == "none") return CpuBinding::kNone;
  return InvalidArgumentError("--bind_to must be core (each local worker on its own CPUs) or none, got '" + text +
                              "'");
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> CpuShare(const std::vector<int>& cpus, int workers, int index) {
  const size_t n = cpus.size();
  if (workers <= 0 || index < 0 || index >= workers || n < static_cast<size_t>(workers)) return {};
  const size_t w = static_cast<size_t>(workers), i = static_cast<size_t>(index);
  return std::vector<int>(cpus.begin() + static_cast<std::ptrdiff_t>(i * n / w),
                          cpus.begin() + static_cast<std::ptrdiff_t>((i + 1) * n / w));
}

std::string DescribeCpus(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) {  // piecewise: GCC 12 warns (-Wrestrict, a false positive) on "-" + std::to_string(...)
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace ringtrain
