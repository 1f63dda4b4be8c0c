#include "nn/optimizers/optimizer.h"

#include <utility>

#include "common/logging.h"
#include "kernels/kernels.h"

namespace ringtrain::nn {

void Optimizer::SetVariables(std::vector<VariableSpan> vars) {
  vars_ = std::move(vars);
  warned_spans_ = false;
  size_t n = 0;
  for (const VariableSpan& v : vars_) n += v.count;
  BuildState(n);
}

void Optimizer::Fit(std::vector<float>& buffer, const char* slot, size_t n, float init) const {
  if (buffer.size() == n) return;
  if (!buffer.empty()) {
    RT_LOG(ERROR) << name() << " optimizer slot '" << slot << "' has " << buffer.size()
                  << " values but the model has " << n << "; restarting it";
  }
  buffer.assign(n, init);
}

void Optimizer::Apply(float* params, const float* grads, size_t n) {
  BuildState(n);
  const float* g = grads;
  if (options_.clip.active()) {
    // The spans must tile [0, n) in order; anything else counts the buffer as one variable.
    bool tiles = !vars_.empty();
    size_t end = 0;
    for (const VariableSpan& v : vars_) {
      tiles = tiles && v.offset == end;
      end = v.offset + v.count;
    }
    tiles = tiles && end == n;
    if (!tiles && !vars_.empty() && !warned_spans_) {
      RT_LOG(ERROR) << "optimizer: the " << vars_.size() << " variables given do not tile the " << n
                    << " parameters in order; clipping treats them as one variable";
      warned_spans_ = true;
    }
    clipped_.resize(n);
    ClipGradients(options_.clip, tiles ? vars_ : std::vector<VariableSpan>{{"", 0, n}}, grads, n, clipped_.data());
    g = clipped_.data();
  }
  if (options_.weight_decay.has_value()) {
    kernels::WeightDecay(params, n, static_cast<float>(*options_.weight_decay), static_cast<float>(lr_));
  }
  Update(params, g, n);
  ++iterations_;
}

}  // namespace ringtrain::nn
