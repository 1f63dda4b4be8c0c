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
    // The kernels that have run on a GPU (the parity tests on an H100) and those written
    // and compiled since, which have not yet.
    std::vector<OpSupport> t;
    for (OpKind kind : ops::AllOpKinds()) {
      const bool ran = kind == OpKind::kView || kind == OpKind::kMaxPool2D;
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
