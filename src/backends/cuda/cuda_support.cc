// What the CUDA backend runs: a plain table and the check behind it, compiled on every
// machine (the docs' op x device table and the plan's refusals need no GPU).
#include "backends/backend.h"

namespace ringtrain::backends {
namespace {

using Level = OpSupport::Level;
using ops::OpKind;

}  // namespace

const std::vector<OpSupport>& CudaDeclaredSupport() {
  static const std::vector<OpSupport> table = [] {
    // Every kind up to kLastRunOnGpu passed the op parity suite on a GPU (an H200); kinds
    // added after it are written and compiled but have not run on one yet.
    constexpr OpKind kLastRunOnGpu = OpKind::kRandomZoom;
    std::vector<OpSupport> t;
    for (OpKind kind : ops::AllOpKinds()) {
      const bool ran = static_cast<int>(kind) <= static_cast<int>(kLastRunOnGpu);
      t.push_back({kind, Level::kFull, ran ? "" : "not yet run on a GPU"});
    }
    return t;
  }();
  return table;
}

Status CudaSupports(const ops::Op& op) {
  const OpSupport& s = CudaDeclaredSupport()[static_cast<size_t>(op.kind)];
  if (s.level == Level::kFull) return Status::Ok();
  return UnimplementedError(s.note);
}

}  // namespace ringtrain::backends
