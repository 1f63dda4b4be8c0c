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
    std::vector<OpSupport> t;
    for (OpKind kind : ops::AllOpKinds()) {
      switch (kind) {
        case OpKind::kDropout:
        case OpKind::kRandomFlip:
        case OpKind::kRandomCrop:
        case OpKind::kRandomRotation:
        case OpKind::kRandomTranslation:
          t.push_back({kind, Level::kNone, "no CUDA kernel yet"});
          break;
        default:
          t.push_back({kind, Level::kFull, ""});
          break;
      }
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
