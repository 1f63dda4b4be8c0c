#include "nn/optimizers/gradient_clip.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"

namespace ringtrain::nn {

std::string GradientClip::Describe() const {
  const std::string v = nlohmann::json(value).dump();
  switch (mode) {
    case Mode::kNorm: return "clipnorm " + v;
    case Mode::kGlobalNorm: return "global_clipnorm " + v;
    case Mode::kValue: return "clipvalue " + v;
    case Mode::kNone: break;
  }
  return "none";
}

void ClipGradients(const GradientClip& clip, const std::vector<VariableSpan>& vars, const float* grads, size_t n,
                   float* out) {
  const float c = static_cast<float>(clip.value);
  switch (clip.mode) {
    case GradientClip::Mode::kNone:
      if (out != grads && n > 0) std::memcpy(out, grads, n * sizeof(float));
      return;
    case GradientClip::Mode::kValue:
      kernels::ClipByValue(out, grads, n, c);
      return;
    case GradientClip::Mode::kNorm:
      // Keras: l2norm = sqrt(sum g^2) (0 when the sum is 0), g * c / max(l2norm, c). The
      // division happens even when nothing is clipped, as in Keras.
      for (const VariableSpan& v : vars) {
        const double sum = kernels::SumSquares(grads + v.offset, v.count);
        const float l2norm = static_cast<float>(std::sqrt(sum));
        // std::max keeps a NaN norm (its first argument), as ops.maximum does.
        kernels::ScaleGradients(out + v.offset, grads + v.offset, v.count, c, std::max(l2norm, c));
      }
      return;
    case GradientClip::Mode::kGlobalNorm: {
      double sum = 0.0;
      for (const VariableSpan& v : vars) sum += kernels::SumSquares(grads + v.offset, v.count);
      const float norm = static_cast<float>(std::sqrt(sum));
      // 1 / 0 is infinity, and min(inf, 1 / c) = 1 / c: a zero gradient stays zero.
      const float inv_norm = 1.0f / norm, inv_c = 1.0f / c;
      const float scale = c * (inv_c < inv_norm ? inv_c : inv_norm) + (norm - norm);
      kernels::ScaleGradients(out, grads, n, scale, 1.0f);
      return;
    }
  }
}

}  // namespace ringtrain::nn
