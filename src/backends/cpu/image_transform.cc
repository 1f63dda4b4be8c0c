#include "backends/cpu/image_transform.h"

#include <algorithm>
#include <cmath>

namespace ringtrain::backends::cpu {
namespace {

// One output pixel's source: up to four taps and TF's interpolation weights. A tap is
// an input pixel index (y * width + x), or -1 outside the image (it reads fill_value);
// bilinear uses [0] (y_floor, x_floor), [1] (y_floor, x_ceil), [2] (y_ceil, x_floor),
// [3] (y_ceil, x_ceil); nearest uses [0] only.
struct Taps {
  int64_t idx[4];
  float wx0, wx1, wy0, wy1;  // x_ceil - x, x - x_floor, y_ceil - y, y - y_floor
  bool fill_all;             // projection == 0: the whole pixel is fill_value
};

Taps Locate(const ProjectiveSampler& s, const float* t, int64_t oy, int64_t ox) {
  Taps tp{};
  const float projection = t[6] * ox + t[7] * oy + 1.f;
  if (projection == 0) {
    tp.fill_all = true;
    return tp;
  }
  const float in_x = (t[0] * ox + t[1] * oy + t[2]) / projection;
  const float in_y = (t[3] * ox + t[4] * oy + t[5]) / projection;
  const float x = MapCoordinate(s.fill_mode, in_x, s.width);
  const float y = MapCoordinate(s.fill_mode, in_y, s.height);
  auto index = [&](int64_t yi, int64_t xi) -> int64_t {
    return (0 <= yi && yi < s.height && 0 <= xi && xi < s.width) ? yi * s.width + xi : -1;
  };
  // Coordinates far outside the image (constant mode) are clamped before the integer
  // conversion, which would otherwise overflow; any such tap reads fill_value anyway.
  auto to_index = [](float v) -> int64_t {
    if (!(v > -4.0f)) return -2;  // also NaN
    if (v > 1e9f) return int64_t{1} << 40;
    return static_cast<int64_t>(v);
  };
  if (s.interpolation == Interpolation::kNearest) {
    tp.idx[0] = index(to_index(std::round(y)), to_index(std::round(x)));
    return tp;
  }
  const float y_floor = std::floor(y), x_floor = std::floor(x);
  const float y_ceil = y_floor + 1, x_ceil = x_floor + 1;
  const int64_t yf = to_index(y_floor), xf = to_index(x_floor), yc = to_index(y_ceil), xc = to_index(x_ceil);
  tp.idx[0] = index(yf, xf);
  tp.idx[1] = index(yf, xc);
  tp.idx[2] = index(yc, xf);
  tp.idx[3] = index(yc, xc);
  tp.wx0 = x_ceil - x;
  tp.wx1 = x - x_floor;
  tp.wy0 = y_ceil - y;
  tp.wy1 = y - y_floor;
  return tp;
}

}  // namespace

// TF's MapCoordinate (tensorflow/core/kernels/image/image_ops.h), which follows
// scipy.ndimage; DenseIndex there is int64_t here.
float MapCoordinate(FillMode mode, float out_coord, int64_t len) {
  float in_coord = out_coord;
  switch (mode) {
    case FillMode::kConstant:
      return out_coord;
    case FillMode::kNearest:
      break;
    case FillMode::kReflect:
      if (in_coord < 0) {
        if (len <= 1) {
          in_coord = 0;
        } else {
          const int64_t sz2 = 2 * len;
          if (in_coord < sz2) in_coord = sz2 * static_cast<int64_t>(-in_coord / sz2) + in_coord;
          in_coord = (in_coord < -len) ? in_coord + sz2 : -in_coord - 1;
        }
      } else if (in_coord > len - 1) {
        if (len <= 1) {
          in_coord = 0;
        } else {
          const int64_t sz2 = 2 * len;
          in_coord -= sz2 * static_cast<int64_t>(in_coord / sz2);
          if (in_coord >= len) in_coord = sz2 - in_coord - 1;
        }
      }
      break;
    case FillMode::kWrap:
      if (in_coord < 0) {
        if (len <= 1) {
          in_coord = 0;
        } else {
          const int64_t sz = len - 1;
          in_coord += len * (static_cast<int64_t>(-in_coord / sz) + 1);
        }
      } else if (in_coord > len - 1) {
        if (len <= 1) {
          in_coord = 0;
        } else {
          const int64_t sz = len - 1;
          in_coord -= len * static_cast<int64_t>(in_coord / sz);
        }
      }
      break;
  }
  // Eigen's scalar_clamp_op: min(max(x, lo), hi).
  const float hi = static_cast<float>(len - 1);
  return std::min(std::max(in_coord, 0.0f), hi);
}

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
