#include "backends/cpu/image_transform.h"

#include "backends/cuda/random_math.h"

namespace ringtrain::backends::cpu {
namespace {

// TF's mapping and tap search are written once, in the header both backends compile
// (host-and-device inline functions, no CUDA dependency).
using gpu::rm::Taps;

Taps Locate(const ProjectiveSampler& s, const float* t, int64_t oy, int64_t ox) {
  return gpu::rm::Locate(t, gpu::rm::ImageDims{s.height, s.width, s.channels}, s.fill_mode, s.interpolation, oy, ox);
}

}  // namespace

float MapCoordinate(FillMode mode, float out_coord, int64_t len) { return gpu::rm::MapCoordinate(mode, out_coord, len); }

void ProjectiveSampler::Forward(const float t[8], const float* in, const float* fill_row, float* out) const {
  const int c = channels;
  auto px = [&](int64_t idx) { return idx >= 0 ? in + idx * c : fill_row; };
  for (int64_t oy = 0; oy < height; ++oy) {
    for (int64_t ox = 0; ox < width; ++ox, out += c) {
      const Taps tp = Locate(*this, t, oy, ox);
      if (tp.fill_all) {
        for (int k = 0; k < c; ++k) out[k] = fill_row[k];
      } else if (interpolation == Interpolation::kNearest) {
        const float* p = px(tp.idx[0]);
        for (int k = 0; k < c; ++k) out[k] = p[k];
      } else {
        const float *p00 = px(tp.idx[0]), *p01 = px(tp.idx[1]), *p10 = px(tp.idx[2]), *p11 = px(tp.idx[3]);
        const float wx0 = tp.wx0, wx1 = tp.wx1, wy0 = tp.wy0, wy1 = tp.wy1;
        for (int k = 0; k < c; ++k) {
          const float top = wx0 * p00[k] + wx1 * p01[k];
          const float bottom = wx0 * p10[k] + wx1 * p11[k];
          out[k] = wy0 * top + wy1 * bottom;
        }
      }
    }
  }
}

void ProjectiveSampler::AddAdjoint(const float t[8], const float* dout, float* din, float* sink) const {
  const int c = channels;
  auto px = [&](int64_t idx) { return idx >= 0 ? din + idx * c : sink; };
  for (int64_t oy = 0; oy < height; ++oy) {
    for (int64_t ox = 0; ox < width; ++ox, dout += c) {
      const Taps tp = Locate(*this, t, oy, ox);
      if (tp.fill_all) continue;
      if (interpolation == Interpolation::kNearest) {
        float* p = px(tp.idx[0]);
        for (int k = 0; k < c; ++k) p[k] += dout[k];
        continue;
      }
      const float w[4] = {tp.wy0 * tp.wx0, tp.wy0 * tp.wx1, tp.wy1 * tp.wx0, tp.wy1 * tp.wx1};
      for (int n = 0; n < 4; ++n) {
        // A zero weight (an integral coordinate) skips the tap; this also keeps the
        // gradient exact for whole-pixel shifts.
        if (w[n] == 0.0f) continue;
        float* p = px(tp.idx[n]);
        const float wn = w[n];
        for (int k = 0; k < c; ++k) p[k] += wn * dout[k];
      }
    }
  }
}

}  // namespace ringtrain::backends::cpu
