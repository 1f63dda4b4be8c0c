// The per-element index and arithmetic functions of the CUDA kernels for the vision ops
// (backends/cuda/vision_kernels.cu): the resampling of Cropping2D, UpSampling2D, Resizing
// and CenterCrop (a box of the input sampled onto the output's grid: copied, nearest, or
// bilinear as tf.image.resize with half-pixel centres), and Permute. The kernels call them
// on the GPU; tests/gpu/vision_math_test.cc calls the same functions in the kernels' loops
// on the host and expects the CPU kernels' bits (backends/cpu/resample_kernels.cc,
// permute_kernel.cc).
//
// The CPU's backward scatters each output's gradient into its taps in row-major output
// order; here each input cell gathers the same terms in the same order (the outputs whose
// taps touch it, row-major, then the taps in TensorFlow's order), each product rounded on
// its own (nvcc builds with --fmad=false, host callers with -ffp-contract=off): the same
// bits, and no atomics.
//
// Header-only, no CUDA dependency; every function is pure; any thread may call it.
#pragma once

#include <cmath>
#include <cstdint>

#if !defined(RT_HD)
#if defined(__CUDACC__)
#define RT_HD __host__ __device__
#else
#define RT_HD
#endif
#endif

namespace ringtrain::gpu::vision {

// ---------------------------------------------------------------- resampling
enum ResampleMode : int { kCopy = 0, kNearest = 1, kBilinear = 2 };

// x[batch, in_h, in_w, c]; the box (top, left, box_h x box_w) of each example sampled
// onto y[batch, out_h, out_w, c]. kCopy needs the box of the output's size.
struct ResampleGeometry {
  int in_h = 0, in_w = 0, c = 0;
  int top = 0, left = 0, box_h = 0, box_w = 0;
  int out_h = 0, out_w = 0;
  int mode = kCopy;
};

// One output index's source cells along an axis (relative to the box) and the weight of
// the upper one.
struct Tap {
  int lower, upper;
  float lerp;
};

RT_HD inline Tap TapOf(int mode, int o, int box, int out) {
  const float scale = static_cast<float>(box) / static_cast<float>(out);
  Tap t{o, o, 0.0f};
  if (mode == kNearest) {
    int s = static_cast<int>(floorf((static_cast<float>(o) + 0.5f) * scale));
    s = s < box - 1 ? s : box - 1;
    t.lower = t.upper = s > 0 ? s : 0;
  } else if (mode == kBilinear) {
    const float in = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    const float in_f = floorf(in);
    const int lo = static_cast<int>(in_f), hi = static_cast<int>(ceilf(in));
    t.lower = lo > 0 ? lo : 0;
    t.upper = hi < box - 1 ? hi : box - 1;
    t.lerp = in - in_f;
  }
  return t;
}

// Channel k of output (oy, ox) from one example's input x.
RT_HD inline float ResampleValue(const ResampleGeometry& g, const float* x, int oy, int ox, int k) {
  const Tap ty = TapOf(g.mode, oy, g.box_h, g.out_h), tx = TapOf(g.mode, ox, g.box_w, g.out_w);
  auto at = [&](int by, int bx) {
    return x[((static_cast<int64_t>(g.top) + by) * g.in_w + g.left + bx) * g.c + k];
  };
  const float tl = at(ty.lower, tx.lower);
  if (g.mode != kBilinear) return tl;
  const float tr = at(ty.lower, tx.upper), bl = at(ty.upper, tx.lower), br = at(ty.upper, tx.upper);
  const float top = tl + (tr - tl) * tx.lerp;
  const float bottom = bl + (br - bl) * tx.lerp;
  return top + (bottom - top) * ty.lerp;
}

// The outputs [*o0, *o1) along an axis whose taps touch box cell b: the taps' lower and
// upper cells never decrease with the output index, so two binary searches find them.
RT_HD inline void TapRange(int mode, int b, int box, int out, int* o0, int* o1) {
  int lo = 0, hi = out;  // first o with upper(o) >= b
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (TapOf(mode, mid, box, out).upper >= b) hi = mid; else lo = mid + 1;
  }
  *o0 = lo;
  hi = out;  // first o with lower(o) > b
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (TapOf(mode, mid, box, out).lower > b) hi = mid; else lo = mid + 1;
  }
  *o1 = lo;
}

// Channel k of input cell (iy, ix)'s gradient from one example's output gradient dy: 0
// outside the box; inside, the terms the CPU adds into it, in its order.
RT_HD inline float ResampleGrad(const ResampleGeometry& g, const float* dy, int iy, int ix, int k) {
  const int by = iy - g.top, bx = ix - g.left;
  if (by < 0 || by >= g.box_h || bx < 0 || bx >= g.box_w) return 0.0f;
  int y0, y1, x0, x1;
  TapRange(g.mode, by, g.box_h, g.out_h, &y0, &y1);
  TapRange(g.mode, bx, g.box_w, g.out_w, &x0, &x1);
  float acc = 0.0f;
  for (int oy = y0; oy < y1; ++oy) {
    const Tap ty = TapOf(g.mode, oy, g.box_h, g.out_h);
    for (int ox = x0; ox < x1; ++ox) {
      const Tap tx = TapOf(g.mode, ox, g.box_w, g.out_w);
      const float d = dy[(static_cast<int64_t>(oy) * g.out_w + ox) * g.c + k];
      if (g.mode != kBilinear) {
        acc += d;  // one tap: (lower, lower) is this cell
        continue;
      }
      if (ty.lower == by) {
        const float dtop = (1.0f - ty.lerp) * d;
        if (tx.lower == bx) acc += dtop * (1.0f - tx.lerp);
        if (tx.upper == bx) acc += dtop * tx.lerp;
      }
      if (ty.upper == by) {
        const float dbottom = ty.lerp * d;
        if (tx.lower == bx) acc += dbottom * (1.0f - tx.lerp);
        if (tx.upper == bx) acc += dbottom * tx.lerp;
      }
    }
  }
  return acc;
}

// ---------------------------------------------------------------- Permute
constexpr int kMaxRank = 8;

// Output axis d of an example has out_shape[d] cells, `stride[d]` floats apart in the
// input (the input stride of the axis it takes).
struct PermuteGeometry {
  int rank = 0;
  int out_shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
  int64_t size = 0;  // floats per example
};

// The input index (within its example) of output index o (within its example).
RT_HD inline int64_t PermuteSource(const PermuteGeometry& p, int64_t o) {
  int64_t src = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    src += (o % p.out_shape[d]) * p.stride[d];
    o /= p.out_shape[d];
  }
  return src;
}

// ---------------------------------------------------------------- Reduce
// An example's input as kept axes x reduced axes: output o's cells are at base(o) +
// offset(k), k in row-major order of the reduced axes (backends/cpu/reduce_kernel.cc's
// order). ReduceSize: an example's input floats.
struct ReduceGeometry {
  int kept = 0, reduced = 0;  // axes of each kind, in input order
  int kept_dim[kMaxRank] = {}, red_dim[kMaxRank] = {};
  int64_t kept_stride[kMaxRank] = {}, red_stride[kMaxRank] = {};
  int64_t in_size = 0, out_size = 0, count = 0;  // floats per example in and out; cells per output
  bool mean = false;
};

// Index i of a row-major grid of `rank` axes (dim), as an offset through `stride`.
RT_HD inline int64_t GridOffset(int rank, const int* dim, const int64_t* stride, int64_t i) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % dim[d]) * stride[d];
    i /= dim[d];
  }
  return off;
}

RT_HD inline int64_t ReduceBase(const ReduceGeometry& g, int64_t o) {
  return GridOffset(g.kept, g.kept_dim, g.kept_stride, o);
}

RT_HD inline int64_t ReduceOffset(const ReduceGeometry& g, int64_t k) {
  return GridOffset(g.reduced, g.red_dim, g.red_stride, k);
}

// The geometry of a reduction of an input of per-example shape `in` (rank 1..kMaxRank) over
// `axes` (0-based), as the CUDA factory and the host tests make it.
inline ReduceGeometry ReduceGeometryOf(const int* in, int rank, const int* axes, int num_axes, bool mean) {
  ReduceGeometry g;
  int64_t stride[kMaxRank] = {};
  stride[rank - 1] = 1;
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * in[d + 1];
  g.in_size = stride[0] * in[0];
  g.out_size = 1;
  g.count = 1;
  g.mean = mean;
  for (int d = 0; d < rank; ++d) {
    bool reduced = false;
    for (int k = 0; k < num_axes; ++k) reduced = reduced || axes[k] == d;
    if (reduced) {
      g.red_dim[g.reduced] = in[d];
      g.red_stride[g.reduced++] = stride[d];
      g.count *= in[d];
    } else {
      g.kept_dim[g.kept] = in[d];
      g.kept_stride[g.kept++] = stride[d];
      g.out_size *= in[d];
    }
  }
  return g;
}

// Output o of one example `x`: the float sum in k order, divided by count for a mean.
RT_HD inline float ReduceValue(const ReduceGeometry& g, const float* x, int64_t o) {
  const float* cell = x + ReduceBase(g, o);
  float acc = 0.0f;
  for (int64_t k = 0; k < g.count; ++k) acc += cell[ReduceOffset(g, k)];
  return g.mean ? acc / static_cast<float>(g.count) : acc;
}

// The gradient of every cell of output o: dy, or dy / count for a mean.
RT_HD inline float ReduceGradient(const ReduceGeometry& g, float dy) {
  return g.mean ? dy / static_cast<float>(g.count) : dy;
}

}  // namespace ringtrain::gpu::vision
