// The counter-based random draws and the per-element arithmetic of the GPU's Dropout and
// augmentation kernels (backends/cuda/random_kernels.cu), as inline functions that
// compile for both the host and the device. They repeat the CPU kernels' formulas
// statement for statement, so a job drops the same units and moves the same pixels on
// either device:
//   - SplitMix64's output function and Rng (common/splitmix.h);
//   - Dropout's stream key and keep rule (backends/cpu/augment_draws.cc);
//   - the augmentation ops' per-example streams (backends/cpu/augment_draws.cc);
//   - RandomFlip's draws and RandomCrop's offsets (backends/cpu/augment_draws.cc), its
//     centred window and TF's bilinear resize (backends/cpu/augment_kernels.cc);
//   - RandomTranslation's and RandomRotation's transforms (backends/cpu/augment_draws.cc).
// TF's coordinate mapping and tap search (MapCoordinate, Locate) are the CPU's too:
// backends/cpu/image_transform.cc calls them. The rest repeats CPU functions that are plain
// host code (some in anonymous namespaces); tests/gpu/random_math_test.cc checks every one
// against the CPU kernels bit for bit on the host.
//
// Everything is integer arithmetic or IEEE float/double operations rounded one at a
// time (the kernels are compiled with --fmad=false; host callers must not contract a*b+c
// into an FMA either), so host and device give the same bits. The one exception is the
// rotation's cos and sin: the device's cosf/sinf are not the host libm's, so the affine
// transforms (DrawTranslation, DrawRotation) are host-only and the kernels receive them
// from the host.
//
// Header-only, no CUDA dependency. Pure functions; any thread may call them.
#pragma once

#include <math.h>  // ::floorf, ::ceilf, ::roundf, ::cosf, ::sinf: declared __host__ __device__ by nvcc

#include <cstdint>

#include "ops/op.h"

#ifndef RT_HD
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::rm {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// ---------------------------------------------------------------- generators

// SplitMix64's output function (common/splitmix.h SplitMix64Finalize).
RT_HD inline uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Rng (common/splitmix.h): a SplitMix64 stream seeded from (seed, stream).
struct Rng {
  uint64_t state;
};

RT_HD inline Rng MakeRng(uint64_t seed, uint64_t stream) {
  return Rng{SplitMix64Finalize(seed + kGolden) ^ SplitMix64Finalize((stream + 1) * 0xD1B54A32D192ED03ULL)};
}

// Rng::Next: one step of SplitMix64.
RT_HD inline uint64_t Next(Rng* rng) { return SplitMix64Finalize(rng->state += kGolden); }

// Rng::Uniform: the top 24 bits scaled by 2^-24, in [0, 1).
RT_HD inline float Uniform(Rng* rng) { return static_cast<float>(Next(rng) >> 40) * (1.0f / 16777216.0f); }

// The step a training Forward runs in, as the draws read it (backends::StepContext).
struct StepKey {
  uint64_t seed = 0;
  int64_t step = 0;
  int replica = 0;
};

// ---------------------------------------------------------------- Dropout

// cpu::DropoutStreamKey.
RT_HD inline uint64_t DropoutStreamKey(uint64_t seed, int64_t step, int replica, uint64_t layer_hash,
                                       uint64_t layer_seed) {
  uint64_t k = SplitMix64Finalize(seed + kGolden);
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(step));
  k = SplitMix64Finalize(k ^ static_cast<uint64_t>(static_cast<int64_t>(replica)));
  k = SplitMix64Finalize(k ^ layer_hash);
  return SplitMix64Finalize(k ^ layer_seed);
}

// cpu::DropoutKeep: element `index` is SplitMix64's (index + 1)-th output from `key`; its
// top 24 bits as a float in [0, 1) keep the element when >= rate.
RT_HD inline bool DropoutKeep(uint64_t key, uint64_t index, float rate) {
  const uint64_t z = SplitMix64Finalize(key + (index + 1) * kGolden);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) >= rate;
}

// y = x * mask, mask = scale where kept, else 0 (the layer's mask times its input, and
// the same for the gradient).
RT_HD inline float DropoutApply(float x, uint64_t key, uint64_t index, float rate, float scale) {
  const float mask = DropoutKeep(key, index, rate) ? scale : 0.0f;
  return x * mask;
}

// ---------------------------------------------------------------- augmentation streams

// augment_draws.cc's Absorb: one more counter into the hash, each position with its
// own multiplier.
RT_HD inline uint64_t Absorb(uint64_t h, uint64_t v, uint64_t position) {
  return SplitMix64Finalize(h ^ SplitMix64Finalize(v + (position + 1) * kGolden));
}

// cpu::ExampleRng: example `example`'s generator in the step `s`.
RT_HD inline Rng ExampleRng(const StepKey& s, uint64_t layer_key, int64_t example) {
  uint64_t h = Absorb(0, static_cast<uint64_t>(s.step), 0);
  h = Absorb(h, static_cast<uint64_t>(s.replica), 1);
  h = Absorb(h, layer_key, 2);
  h = Absorb(h, static_cast<uint64_t>(example), 3);
  return MakeRng(s.seed, h);
}

// cpu::UniformIn: uniform in [lo, hi) from one draw, computed in double.
RT_HD inline float UniformIn(Rng* rng, double lo, double hi) {
  return static_cast<float>(lo + (hi - lo) * static_cast<double>(Uniform(rng)));
}

// Per-example images: [height, width, channels], channels last.
struct ImageDims {
  int height = 0, width = 0, channels = 0;
  RT_HD int64_t size() const { return static_cast<int64_t>(height) * width * channels; }
};

// ---------------------------------------------------------------- RandomFlip

// The example's flips: bit 0 left-right, bit 1 upside down; one draw per direction the
// mode names, horizontal first, each flipping when < 1/2.
RT_HD inline int DrawFlips(const StepKey& s, uint64_t layer_key, int64_t example, bool horizontal, bool vertical) {
  Rng rng = ExampleRng(s, layer_key, example);
  int f = 0;
  if (horizontal && Uniform(&rng) < 0.5f) f |= 1;
  if (vertical && Uniform(&rng) < 0.5f) f |= 2;
  return f;
}

// The input element (within the example) that output element i of a flipped example
// reads; a flip is its own adjoint, so the backward pass maps the gradient the same way.
RT_HD inline int64_t FlipSource(int64_t i, const ImageDims& d, int flips) {
  const int64_t k = i % d.channels;
  const int64_t px = i / d.channels;
  const int64_t col = px % d.width, row = px / d.width;
  const int64_t src_row = (flips & 2) ? d.height - 1 - row : row;
  const int64_t src_col = (flips & 1) ? d.width - 1 - col : col;
  return (src_row * d.width + src_col) * d.channels + k;
}

// ---------------------------------------------------------------- RandomCrop

// An offset uniform over [0, range), from the top 53 bits of one draw.
RT_HD inline int CropOffset(Rng* rng, int range) {
  const double u = static_cast<double>(Next(rng) >> 11) * (1.0 / 9007199254740992.0);
  const int o = static_cast<int>(u * range);
  return o < range - 1 ? o : range - 1;
}

// The example's random crop offsets (input at least height x width): the row first.
RT_HD inline void DrawCropOffsets(const StepKey& s, uint64_t layer_key, int64_t example, const ImageDims& in,
                                  int height, int width, int* h0, int* w0) {
  Rng rng = ExampleRng(s, layer_key, example);
  *h0 = CropOffset(&rng, in.height - height + 1);
  *w0 = CropOffset(&rng, in.width - width + 1);
}

// The deterministic path's window: Keras' largest centred window of the target's aspect
// ratio (at least one pixel), and whether it already has the target size.
struct CropBox {
  int h0 = 0, w0 = 0, crop_h = 1, crop_w = 1;
  bool is_target = false;
};

RT_HD inline CropBox CenteredBox(const ImageDims& in, int height, int width) {
  const int H = in.height, W = in.width;
  CropBox b;
  int crop_h = static_cast<int>(static_cast<double>(static_cast<int64_t>(W) * height) / width);
  crop_h = H < crop_h ? H : crop_h;
  b.crop_h = crop_h < 1 ? 1 : crop_h;
  int crop_w = static_cast<int>(static_cast<double>(static_cast<int64_t>(H) * width) / height);
  crop_w = W < crop_w ? W : crop_w;
  b.crop_w = crop_w < 1 ? 1 : crop_w;
  b.h0 = static_cast<int>(static_cast<double>(H - b.crop_h) / 2);
  b.w0 = static_cast<int>(static_cast<double>(W - b.crop_w) / 2);
  b.is_target = b.crop_h == height && b.crop_w == width;
  return b;
}

// Output row or column i's source in TF's resize (compute_interpolation_weights, half-
// pixel centres): in = (i + 0.5) * scale - 0.5 with scale = in_size / out_size in float.
struct ResizeLerp {
  int lower, upper;
  float lerp;
};

RT_HD inline ResizeLerp ResizeWeight(int in_size, int out_size, int i) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
  const float in_f = ::floorf(in);
  ResizeLerp l;
  const int lower = static_cast<int>(in_f);
  l.lower = lower < 0 ? 0 : lower;
  const int upper = static_cast<int>(::ceilf(in));
  l.upper = in_size - 1 < upper ? in_size - 1 : upper;
  l.lerp = in - in_f;
  return l;
}

// Output element i (of [height, width, C]) of a crop at (h0, w0): the input element it
// copies.
RT_HD inline int64_t CropSource(int64_t i, const ImageDims& in, int width, int h0, int w0) {
  const int64_t k = i % in.channels;
  const int64_t px = i / in.channels;
  const int64_t col = px % width, row = px / width;
  return ((h0 + row) * in.width + w0 + col) * in.channels + k;
}

// The crop's adjoint gathered: input element j receives output element CropTarget (or
// nothing, -1, outside the window).
RT_HD inline int64_t CropTarget(int64_t j, const ImageDims& in, int height, int width, int h0, int w0) {
  const int64_t k = j % in.channels;
  const int64_t px = j / in.channels;
  const int64_t row = px / in.width - h0, col = px % in.width - w0;
  if (row < 0 || row >= height || col < 0 || col >= width) return -1;
  return (row * width + col) * in.channels + k;
}

// Output element i of the bilinear resize of the window `box` of one example x to
// [height, width, C], in TF's order: top = tl + (tr - tl) * xl,
// bottom = bl + (br - bl) * xl, out = top + (bottom - top) * yl.
RT_HD inline float ResizeElement(const float* x, const ImageDims& in, const CropBox& box, int height, int width,
                                 int64_t i) {
  const int64_t c = in.channels, W = in.width;
  const int64_t k = i % c;
  const int64_t px = i / c;
  const int col = static_cast<int>(px % width), r = static_cast<int>(px / width);
  const ResizeLerp ly = ResizeWeight(box.crop_h, height, r);
  const ResizeLerp lx = ResizeWeight(box.crop_w, width, col);
  const float* b = x + (static_cast<int64_t>(box.h0) * W + box.w0) * c;
  const float* top_row = b + ly.lower * W * c;
  const float* bottom_row = b + ly.upper * W * c;
  const float tl = top_row[lx.lower * c + k], tr = top_row[lx.upper * c + k];
  const float bl = bottom_row[lx.lower * c + k], br = bottom_row[lx.upper * c + k];
  const float xl = lx.lerp, yl = ly.lerp;
  const float top = tl + (tr - tl) * xl;
  const float bottom = bl + (br - bl) * xl;
  return top + (bottom - top) * yl;
}

// The resize's adjoint for channel k of one example: zeroes dx's channel k, then adds
// every output gradient's four shares in the CPU's order (outputs row-major; tl, tr,
// bl, br), so each element's sum is the CPU's, bit for bit.
RT_HD inline void ResizeAdjointChannel(const float* dy, const ImageDims& in, const CropBox& box, int height,
                                       int width, int64_t k, float* dx) {
  const int64_t c = in.channels, W = in.width;
  for (int64_t p = 0; p < static_cast<int64_t>(in.height) * W; ++p) dx[p * c + k] = 0.0f;
  float* b = dx + (static_cast<int64_t>(box.h0) * W + box.w0) * c;
  for (int r = 0; r < height; ++r) {
    const ResizeLerp ly = ResizeWeight(box.crop_h, height, r);
    float* top_row = b + ly.lower * W * c;
    float* bottom_row = b + ly.upper * W * c;
    for (int col = 0; col < width; ++col) {
      const ResizeLerp lx = ResizeWeight(box.crop_w, width, col);
      const float g = dy[(static_cast<int64_t>(r) * width + col) * c + k];
      const float xl = lx.lerp, yl = ly.lerp;
      const float dtop = g * (1.0f - yl), dbottom = g * yl;
      top_row[lx.lower * c + k] += dtop * (1.0f - xl);
      top_row[lx.upper * c + k] += dtop * xl;
      bottom_row[lx.lower * c + k] += dbottom * (1.0f - xl);
      bottom_row[lx.upper * c + k] += dbottom * xl;
    }
  }
}

// ---------------------------------------------------------------- RandomTranslation, RandomRotation

using FillMode = ops::Op::FillMode;
using Interpolation = ops::Op::Interpolation;

// The transform [a0, a1, a2, b0, b1, b2, c0, c1] of one example (host only: see the top).
// Translation: dy = U(height range) * H, then dx = U(width range) * W; [1, 0, -dx, 0, 1, -dy, 0, 0].
inline void DrawTranslation(const StepKey& s, uint64_t layer_key, int64_t example, const ImageDims& d, double h_lo,
                            double h_hi, double w_lo, double w_hi, float t[8]) {
  Rng rng = ExampleRng(s, layer_key, example);
  const float h = static_cast<float>(d.height), w = static_cast<float>(d.width);
  const float dy = UniformIn(&rng, h_lo, h_hi) * h;
  const float dx = UniformIn(&rng, w_lo, w_hi) * w;
  const float m[8] = {1, 0, -dx, 0, 1, -dy, 0, 0};
  for (int i = 0; i < 8; ++i) t[i] = m[i];
}

// Rotation: angle = U(lo * 2pi, hi * 2pi) in float, cos and sin in float, about the
// pixel-grid centre: [cos, -sin, x_off, sin, cos, y_off, 0, 0].
inline void DrawRotation(const StepKey& s, uint64_t layer_key, int64_t example, const ImageDims& d, double lo,
                         double hi, float t[8]) {
  Rng rng = ExampleRng(s, layer_key, example);
  const float h = static_cast<float>(d.height), w = static_cast<float>(d.width);
  constexpr double kTwoPi = 6.283185307179586;
  const float angle = UniformIn(&rng, lo * kTwoPi, hi * kTwoPi);
  const float c = ::cosf(angle), sn = ::sinf(angle);
  const float x_off = ((w - 1) - (c * (w - 1) - sn * (h - 1))) / 2.0f;
  const float y_off = ((h - 1) - (sn * (w - 1) + c * (h - 1))) / 2.0f;
  const float m[8] = {c, -sn, x_off, sn, c, y_off, 0, 0};
  for (int i = 0; i < 8; ++i) t[i] = m[i];
}

// TF's MapCoordinate<mode>(coord, len) (cpu::MapCoordinate), then Eigen's clamp
// min(max(x, 0), len - 1) with std::max / std::min's comparisons (NaN stays NaN).
RT_HD inline float MapCoordinate(FillMode mode, float out_coord, int64_t len) {
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
  const float hi = static_cast<float>(len - 1);
  const float lo_clamped = (in_coord < 0.0f) ? 0.0f : in_coord;  // std::max(in_coord, 0.0f)
  return (hi < lo_clamped) ? hi : lo_clamped;                     // std::min(..., hi)
}

// One output pixel's source: up to four taps, each an input pixel (y * width + x) or -1
// outside the image (reads fill_value), and TF's weights. Bilinear: [0] (y_floor,
// x_floor), [1] (y_floor, x_ceil), [2] (y_ceil, x_floor), [3] (y_ceil, x_ceil); nearest:
// [0] only. fill_all: the projection is 0, the whole pixel reads fill_value.
struct Taps {
  int64_t idx[4];
  float wx0, wx1, wy0, wy1;  // x_ceil - x, x - x_floor, y_ceil - y, y - y_floor
  bool fill_all;
};

// A float coordinate as an index; far-outside coordinates (constant mode) are clamped
// before the conversion, which would otherwise overflow (NaN too).
RT_HD inline int64_t ToIndex(float v) {
  if (!(v > -4.0f)) return -2;
  if (v > 1e9f) return int64_t{1} << 40;
  return static_cast<int64_t>(v);
}

RT_HD inline int64_t TapIndex(const ImageDims& d, int64_t yi, int64_t xi) {
  return (0 <= yi && yi < d.height && 0 <= xi && xi < d.width) ? yi * d.width + xi : -1;
}

// The taps of output pixel (oy, ox) under transform t (image_transform.cc's Locate).
RT_HD inline Taps Locate(const float* t, const ImageDims& d, FillMode mode, Interpolation interp, int64_t oy,
                         int64_t ox) {
  Taps tp{};
  const float projection = t[6] * ox + t[7] * oy + 1.f;
  if (projection == 0) {
    tp.fill_all = true;
    return tp;
  }
  const float in_x = (t[0] * ox + t[1] * oy + t[2]) / projection;
  const float in_y = (t[3] * ox + t[4] * oy + t[5]) / projection;
  const float x = MapCoordinate(mode, in_x, d.width);
  const float y = MapCoordinate(mode, in_y, d.height);
  if (interp == Interpolation::kNearest) {
    tp.idx[0] = TapIndex(d, ToIndex(::roundf(y)), ToIndex(::roundf(x)));
    return tp;
  }
  const float y_floor = ::floorf(y), x_floor = ::floorf(x);
  const float y_ceil = y_floor + 1, x_ceil = x_floor + 1;
  const int64_t yf = ToIndex(y_floor), xf = ToIndex(x_floor), yc = ToIndex(y_ceil), xc = ToIndex(x_ceil);
  tp.idx[0] = TapIndex(d, yf, xf);
  tp.idx[1] = TapIndex(d, yf, xc);
  tp.idx[2] = TapIndex(d, yc, xf);
  tp.idx[3] = TapIndex(d, yc, xc);
  tp.wx0 = x_ceil - x;
  tp.wx1 = x - x_floor;
  tp.wy0 = y_ceil - y;
  tp.wy1 = y - y_floor;
  return tp;
}

// Channel k of tap idx of one example x, or fill_value outside the image.
RT_HD inline float TapValue(const float* x, int64_t c, int64_t k, int64_t idx, float fill_value) {
  return idx >= 0 ? x[idx * c + k] : fill_value;
}

// Output element i of one example x sampled through t (ProjectiveSampler::Forward):
// top = wx0 p00 + wx1 p01, bottom = wx0 p10 + wx1 p11, out = wy0 top + wy1 bottom.
RT_HD inline float AffineElement(const float* t, const float* x, const ImageDims& d, FillMode mode,
                                 Interpolation interp, float fill_value, int64_t i) {
  const int64_t c = d.channels;
  const int64_t k = i % c;
  const int64_t px = i / c;
  const Taps tp = Locate(t, d, mode, interp, px / d.width, px % d.width);
  if (tp.fill_all) return fill_value;
  if (interp == Interpolation::kNearest) return TapValue(x, c, k, tp.idx[0], fill_value);
  const float p00 = TapValue(x, c, k, tp.idx[0], fill_value), p01 = TapValue(x, c, k, tp.idx[1], fill_value);
  const float p10 = TapValue(x, c, k, tp.idx[2], fill_value), p11 = TapValue(x, c, k, tp.idx[3], fill_value);
  const float top = tp.wx0 * p00 + tp.wx1 * p01;
  const float bottom = tp.wx0 * p10 + tp.wx1 * p11;
  return tp.wy0 * top + tp.wy1 * bottom;
}

// The sampling's adjoint for channel k of one example (ProjectiveSampler::AddAdjoint
// into a zeroed din): zeroes dx's channel k, then adds each output gradient to its taps
// in the CPU's order (outputs row-major; taps 0..3, a zero weight skipped, taps outside
// the image dropped), so each element's sum is the CPU's, bit for bit.
RT_HD inline void AffineAdjointChannel(const float* t, const float* dy, const ImageDims& d, FillMode mode,
                                       Interpolation interp, int64_t k, float* dx) {
  const int64_t c = d.channels;
  const int64_t pixels = static_cast<int64_t>(d.height) * d.width;
  for (int64_t p = 0; p < pixels; ++p) dx[p * c + k] = 0.0f;
  for (int64_t oy = 0; oy < d.height; ++oy) {
    for (int64_t ox = 0; ox < d.width; ++ox) {
      const Taps tp = Locate(t, d, mode, interp, oy, ox);
      if (tp.fill_all) continue;
      const float g = dy[(oy * d.width + ox) * c + k];
      if (interp == Interpolation::kNearest) {
        if (tp.idx[0] >= 0) dx[tp.idx[0] * c + k] += g;
        continue;
      }
      const float w[4] = {tp.wy0 * tp.wx0, tp.wy0 * tp.wx1, tp.wy1 * tp.wx0, tp.wy1 * tp.wx1};
      for (int n = 0; n < 4; ++n) {
        if (w[n] == 0.0f) continue;
        if (tp.idx[n] >= 0) dx[tp.idx[n] * c + k] += w[n] * g;
      }
    }
  }
}

}  // namespace ringtrain::gpu::rm
