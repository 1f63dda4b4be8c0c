// The backends' declared support (backends/backend.h) and the table generated from it.
#include "backends/backend.h"

namespace ringtrain::backends {

const char* DeviceName(Device device) {
  switch (device) {
    case Device::kCpu: return "cpu";
    case Device::kCuda: return "cuda";
  }
  return "?";
}

const std::vector<OpSupport>& CpuDeclaredSupport() {
  static const std::vector<OpSupport> table = [] {
    std::vector<OpSupport> t;
    for (ops::OpKind kind : ops::AllOpKinds()) t.push_back({kind, OpSupport::Level::kFull, ""});
    return t;
  }();
  return table;
}

namespace {

std::string Cell(const OpSupport& s) {
  switch (s.level) {
    case OpSupport::Level::kFull: return s.note.empty() ? "yes" : "yes (" + s.note + ")";
    case OpSupport::Level::kPartial: return "partial: " + s.note;
    case OpSupport::Level::kNone: return "no (" + s.note + ")";
  }
  return "?";
}

}  // namespace

std::string DeviceTableMarkdown() {
  const std::vector<OpSupport>& cpu = CpuDeclaredSupport();
  const std::vector<OpSupport>& cuda = CudaDeclaredSupport();
  std::string out = "| op | cpu | cuda |\n|---|---|---|\n";
  for (size_t i = 0; i < ops::AllOpKinds().size(); ++i) {
    out += std::string("| `") + ops::OpKindName(ops::AllOpKinds()[i]) + "` | " + Cell(cpu[i]) + " | " + Cell(cuda[i]) +
           " |\n";
  }
  return out;
}

}  // namespace ringtrain::backends
