// Keras' gradient clipping (keras/src/optimizers/base_optimizer.py, _clip_gradients),
// applied by every optimizer to the already all-reduced gradient before its update, as
// Keras does under a distribution strategy (aggregate, then clip):
//   "clipnorm": c         each variable's gradient g -> g * c / max(||g||, c)
//   "global_clipnorm": c  every gradient g -> g * c * min(1 / N, 1 / c) + (N - N), N the
//                         norm of all gradients together (NaN when N is not finite)
//   "clipvalue": c        every element clipped to [-c, c]
// At most one of the three may be set (Keras raises otherwise).
//
// Norms are summed in double in a fixed order, so the result is the same bits whatever
// the thread count; the element-wise part runs in kernels/ without contraction.
// Threading: as kernels/ (one caller at a time). Nothing here fails.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ringtrain::nn {

// One trainable variable inside the optimizer's flat buffer: [offset, offset + count).
struct VariableSpan {
  std::string name;
  size_t offset = 0, count = 0;
};

struct GradientClip {
  enum class Mode { kNone, kNorm, kGlobalNorm, kValue };
  Mode mode = Mode::kNone;
  double value = 0.0;  // > 0 unless kNone

  bool active() const { return mode != Mode::kNone; }
  // "clipnorm 1", "global_clipnorm 5", "clipvalue 0.5" or "none", for logs.
  std::string Describe() const;
};

// Writes the clipped grads[0, n) to out[0, n). `vars` cover [0, n) in order (clipnorm is
// per variable); out may equal grads.
void ClipGradients(const GradientClip& clip, const std::vector<VariableSpan>& vars, const float* grads, size_t n,
                   float* out);

}  // namespace ringtrain::nn
