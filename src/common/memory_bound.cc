#include "common/memory_bound.h"

#include "common/file.h"

namespace ringtrain {

std::string MemoryBound::Describe() const {
  if (bytes == 0) return "none";
  return FormatBytes(bytes) + (from_environment ? " (RINGTRAIN_MAX_MEMORY_MB)"
                                                : " (RINGTRAIN_MAX_MEMORY_MB, default: this machine's physical memory)");
}

Status CheckMemory(const std::vector<MemoryUse>& uses, const MemoryBound& bound, int workers) {
  if (bound.bytes == 0 || uses.empty()) return Status::Ok();
  uint64_t total = 0;
  const MemoryUse* largest = &uses.front();
  for (const MemoryUse& u : uses) {
    total = SatAdd(total, u.bytes);
    if (u.bytes > largest->bytes) largest = &u;
  }
  const uint64_t n = static_cast<uint64_t>(workers < 1 ? 1 : workers);
  total = SatMul(total, n);
  if (total <= bound.bytes) return Status::Ok();
  const auto about = [](uint64_t b) { return b == kSaturated ? std::string("more than 16 EiB") : "about " + FormatBytes(b); };
  std::string msg = largest->cause + " would need " + about(largest->bytes) + " for " + largest->what;
  if (n > 1) {
    msg += " in each of " + std::to_string(n) + " workers on this machine (" + about(total) + " in all)";
  } else {
    msg += " (" + about(total) + " in all)";
  }
  msg += "; the bound is " + bound.Describe() + "; " + largest->remedy;
  return ResourceExhaustedError(msg).About(Subject::kConfig);
}

}  // namespace ringtrain
