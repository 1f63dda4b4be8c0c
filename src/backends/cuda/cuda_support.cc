// What the CUDA backend runs: a plain table and the check behind it, compiled on every
// machine (the docs' op x device table and the plan's refusals need no GPU).
#include "backends/backend.h"

namespace ringtrain::backends {
namespace {

using Level = OpSupport::Level;
using ops::Activation;
using ops::OpKind;

bool ReluOrLinear(Activation a) { return a == Activation::kLinear || a == Activation::kRelu; }

}  // namespace

const std::vector<OpSupport>& CudaDeclaredSupport() {
  static const std::vector<OpSupport> table = [] {
    std::vector<OpSupport> t;
    for (OpKind kind : ops::AllOpKinds()) {
      OpSupport s{kind, Level::kNone, "no CUDA kernel yet"};
      switch (kind) {
        case OpKind::kView:
        case OpKind::kMaxPool2D:
        case OpKind::kBatchNorm:
        case OpKind::kLayerNorm:
          s = {kind, Level::kFull, ""};
          break;
        case OpKind::kDense:
          s = {kind, Level::kPartial, "activation relu or linear only"};
          break;
        case OpKind::kConv2D:
          s = {kind, Level::kPartial, "no dilation, no groups; activation relu or linear only"};
          break;
        case OpKind::kAdd:
          s = {kind, Level::kPartial, "two inputs only"};
          break;
        default:
          break;
      }
      t.push_back(s);
    }
    return t;
  }();
  return table;
}

Status CudaSupports(const ops::Op& op) {
  const OpSupport& s = CudaDeclaredSupport()[static_cast<size_t>(op.kind)];
  switch (s.level) {
    case Level::kFull:
      return Status::Ok();
    case Level::kNone:
      return UnimplementedError(s.note);
    case Level::kPartial:
      break;
  }
  switch (op.kind) {
    case OpKind::kDense:
      if (!ReluOrLinear(op.activation)) return UnimplementedError(std::string("activation ") + ops::ActivationName(op.activation));
      return Status::Ok();
    case OpKind::kConv2D:
      if (op.window.dilation_h != 1 || op.window.dilation_w != 1) return UnimplementedError("dilation");
      if (op.groups != 1) return UnimplementedError("groups");
      if (!ReluOrLinear(op.activation)) return UnimplementedError(std::string("activation ") + ops::ActivationName(op.activation));
      return Status::Ok();
    case OpKind::kAdd:
      if (op.num_inputs != 2) return UnimplementedError(std::to_string(op.num_inputs) + " inputs");
      if (op.activation != Activation::kLinear) return UnimplementedError("a fused activation");
      return Status::Ok();
    default:
      return UnimplementedError(s.note);
  }
}

}  // namespace ringtrain::backends
