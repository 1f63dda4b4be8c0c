// Binding the workers that `launch` and `bench train` start on one machine to CPUs, as
// mpirun's --bind-to core does: worker i of n gets its own contiguous share of the CPUs
// this process may use, so two workers' compute threads never share a core and a
// worker's threads do not migrate across cores (losing their L2, which the conv kernels'
// blocking counts on). Unbound, `ps` showed both workers' compute threads on one CPU at
// times (ResNet-20, 2 workers, 2 cores); the throughput difference was inside that
// machine's run-to-run noise (docs/perf/training.md, "ResNet-20 and VGG16").
//
// With more workers than usable CPUs nothing is bound (the kernel's scheduler shares them).
// Pure functions but AllowedCpus, which asks the kernel; all thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain {

enum class CpuBinding { kNone, kCore };

// "core" or "none" (--bind_to); anything else: an error naming both.
StatusOr<CpuBinding> ParseCpuBinding(const std::string& text);

// The CPUs this process may run on (sched_getaffinity), ascending; empty if unknown.
std::vector<int> AllowedCpus();

// Worker `index` of `workers`' share of `cpus`: contiguous, shares differing in size by
// at most one CPU, together all of them. Empty (not bound) when there are fewer CPUs
// than workers, or index is out of range.
std::vector<int> CpuShare(const std::vector<int>& cpus, int workers, int index);

// "0-3,8" for {0, 1, 2, 3, 8}: how the share is shown in logs.
std::string DescribeCpus(const std::vector<int>& cpus);

}  // namespace ringtrain
