// backends/cuda/vision_math.h on the host against the CPU kernels it mirrors
// (backends/cpu/resample_kernels.cc, permute_kernel.cc). The CUDA kernels
// (backends/cuda/vision_kernels.cu) are thin loops over these functions, and CI has no
// GPU, so this is where their arithmetic is proven: each test runs the functions in the
// kernels' loops (one output or input element per iteration, the same index
// decomposition) on random data and expects the CPU kernel's bits, the backward's
// gathered sums included.
#include "backends/cuda/vision_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/cpu_run.h"
#include "nn/layer.h"
#include "nn/model_build.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;

void ExpectSameBits(const float* got, const float* want, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << " differs at " << i << ": " << got[i] << " vs " << want[i];
  }
}

// Values over many binades and both signs: a sum in another order shows.
std::vector<float> WideRandom(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-20, 6), sign(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mant(gen), expo(gen)) * (sign(gen) ? 1.0f : -1.0f);
  return v;
}

struct OneLayer {
  nn::internal::LayerGraph graph;
  nn::Layer* layer = nullptr;
  std::unique_ptr<nn::testing::CpuRun> run;
};

void Build(const json& layer, const json& input_shape, OneLayer* out) {
  json model = {{"input_shape", input_shape}, {"layers", json::array({layer, {{"type", "flatten"}}})}};
  const Status s = nn::internal::BuildLayerGraph(model, &out->graph);
  ASSERT_TRUE(s.ok()) << s.ToString();
  out->layer = out->graph.layers[0].get();
  out->run = std::make_unique<nn::testing::CpuRun>(*out->layer);
}

// The geometry the CUDA factory (backends/cuda/vision_kernel.cc) makes of the op.
vision::ResampleGeometry GeometryOf(const nn::Layer& layer) {
  const ops::Op op = layer.op();
  const nn::Shape& in = layer.input_shape();
  const nn::Shape& out = layer.output_shape();
  vision::ResampleGeometry g;
  g.in_h = in[0];
  g.in_w = in[1];
  g.c = in[2];
  g.out_h = out[0];
  g.out_w = out[1];
  g.box_h = in[0];
  g.box_w = in[1];
  if (op.kind == ops::OpKind::kCropping2D) {
    g.top = op.window.pad_top;
    g.left = op.window.pad_left;
    g.box_h = out[0];
    g.box_w = out[1];
  } else if (op.kind == ops::OpKind::kResizing || op.kind == ops::OpKind::kCenterCrop) {
    g.top = op.window.pad_top;
    g.left = op.window.pad_left;
    g.box_h = op.crop_height;
    g.box_w = op.crop_width;
  }
  if (g.box_h != g.out_h || g.box_w != g.out_w) {
    g.mode = op.interpolation == ops::Op::Interpolation::kNearest ? vision::kNearest : vision::kBilinear;
  }
  return g;
}

struct Case {
  json layer;
  std::vector<int> shape;
};

TEST(VisionMathResample, ForwardAndGatheredBackwardBitIdentical) {
  const std::vector<Case> cases = {
      {{{"type", "cropping2d"}, {"cropping", {{1, 2}, {0, 3}}}}, {6, 7, 3}},
      {{{"type", "up_sampling2d"}}, {4, 5, 3}},
      {{{"type", "up_sampling2d"}, {"size", {3, 5}}}, {3, 2, 2}},
      {{{"type", "up_sampling2d"}, {"interpolation", "bilinear"}}, {4, 5, 3}},
      {{{"type", "up_sampling2d"}, {"size", {3, 4}}, {"interpolation", "bilinear"}}, {5, 3, 2}},
      {{{"type", "resizing"}, {"height", 4}, {"width", 3}}, {9, 7, 2}},
      {{{"type", "resizing"}, {"height", 13}, {"width", 6}}, {4, 5, 2}},
      {{{"type", "resizing"}, {"height", 3}, {"width", 17}}, {5, 4, 1}},  // down one way, up the other
      {{{"type", "resizing"}, {"height", 5}, {"width", 9}, {"interpolation", "nearest"}}, {7, 4, 3}},
      {{{"type", "resizing"}, {"height", 3}, {"width", 2}, {"interpolation", "nearest"}}, {8, 9, 2}},
      {{{"type", "resizing"}, {"height", 4}, {"width", 4}, {"crop_to_aspect_ratio", true}}, {6, 10, 2}},
      {{{"type", "resizing"}, {"height", 5}, {"width", 6}}, {5, 6, 2}},  // same size: a copy
      {{{"type", "center_crop"}, {"height", 3}, {"width", 4}}, {8, 7, 3}},
      {{{"type", "center_crop"}, {"height", 9}, {"width", 4}}, {5, 6, 2}},
  };
  constexpr int kBatch = 2;
  uint32_t seed = 500;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.layer.dump());
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build(c.layer, c.shape, &one));
    const vision::ResampleGeometry g = GeometryOf(*one.layer);
    const int64_t in_size = one.layer->input_size(), out_size = one.layer->output_size();
    const std::vector<float> x = WideRandom(static_cast<size_t>(kBatch * in_size), seed++);
    const std::vector<float> dy = WideRandom(static_cast<size_t>(kBatch * out_size), seed++);

    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(static_cast<size_t>(kBatch * out_size));
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {  // ResampleForwardKernel's loop
      const int k = static_cast<int>(i % g.c);
      int64_t rest = i / g.c;
      const int ox = static_cast<int>(rest % g.out_w);
      rest /= g.out_w;
      const int oy = static_cast<int>(rest % g.out_h);
      y[i] = vision::ResampleValue(g, x.data() + (rest / g.out_h) * in_size, oy, ox, k);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));

    const float* want_dx = one.run->Backward(dy.data(), true);
    std::vector<float> dx(x.size());
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {  // ResampleBackwardKernel's loop
      const int k = static_cast<int>(i % g.c);
      int64_t rest = i / g.c;
      const int ix = static_cast<int>(rest % g.in_w);
      rest /= g.in_w;
      const int iy = static_cast<int>(rest % g.in_h);
      dx[i] = vision::ResampleGrad(g, dy.data() + (rest / g.in_h) * out_size, iy, ix, k);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

TEST(VisionMathPermute, BothDirectionsBitIdentical) {
  const std::vector<Case> cases = {
      {{{"type", "permute"}, {"dims", {3, 1, 2}}}, {4, 5, 3}},
      {{{"type", "permute"}, {"dims", {2, 1}}}, {6, 7}},
      {{{"type", "permute"}, {"dims", {2, 3, 1}}}, {3, 4, 5}},
      {{{"type", "permute"}, {"dims", {4, 2, 1, 3}}}, {2, 3, 4, 5}},
  };
  constexpr int kBatch = 3;
  uint32_t seed = 600;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.layer.dump());
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build(c.layer, c.shape, &one));
    const std::vector<int>& perm = one.layer->op().permutation;
    const nn::Shape& in = one.layer->input_shape();
    const int rank = static_cast<int>(in.size());
    std::vector<int64_t> in_strides(rank, 1);
    for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * in[d + 1];
    vision::PermuteGeometry p;
    p.rank = rank;
    p.size = one.layer->input_size();
    for (int d = 0; d < rank; ++d) {
      p.out_shape[d] = in[perm[d]];
      p.stride[d] = in_strides[perm[d]];
    }
    const std::vector<float> x = WideRandom(static_cast<size_t>(kBatch * p.size), seed++);
    const std::vector<float> dy = WideRandom(x.size(), seed++);
    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(x.size()), dx(x.size());
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      y[i] = x[(i / p.size) * p.size + vision::PermuteSource(p, i % p.size)];
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));
    const float* want_dx = one.run->Backward(dy.data(), true);
    for (int64_t i = 0; i < static_cast<int64_t>(dy.size()); ++i) {
      dx[(i / p.size) * p.size + vision::PermuteSource(p, i % p.size)] = dy[i];
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

// Reduce's per-output sums and cell gradients, as the CUDA kernels compute them, against
// the CPU kernel: the same bits (the same float summation order).
TEST(VisionMathReduce, BothDirectionsBitIdentical) {
  const std::vector<Case> cases = {
      {{{"type", "reduce"}, {"op", "sum"}, {"axis", {1, 2}}}, {4, 5, 3}},
      {{{"type", "reduce"}, {"op", "mean"}, {"axis", -1}, {"keepdims", true}}, {4, 5, 3}},
      {{{"type", "reduce"}, {"op", "mean"}, {"axis", {1, 3}}}, {3, 4, 5}},
      {{{"type", "reduce"}, {"op", "sum"}, {"axis", 2}}, {6, 7}},
      {{{"type", "reduce"}, {"op", "sum"}, {"axis", {1, 2, 3}}}, {2, 3, 4}},
  };
  constexpr int kBatch = 3;
  uint32_t seed = 700;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.layer.dump());
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build(c.layer, c.shape, &one));
    const ops::Op op = one.layer->op();
    const nn::Shape& in = one.layer->input_shape();
    const vision::ReduceGeometry g = vision::ReduceGeometryOf(in.data(), static_cast<int>(in.size()),
                                                              op.reduce_axes.data(),
                                                              static_cast<int>(op.reduce_axes.size()), op.reduce_mean);
    ASSERT_EQ(g.out_size, one.layer->output_size());
    const std::vector<float> x = WideRandom(static_cast<size_t>(kBatch * g.in_size), seed++);
    const std::vector<float> dy = WideRandom(static_cast<size_t>(kBatch * g.out_size), seed++);
    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(dy.size()), dx(x.size());
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      y[i] = vision::ReduceValue(g, x.data() + (i / g.out_size) * g.in_size, i % g.out_size);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));
    const float* want_dx = one.run->Backward(dy.data(), true);
    for (int64_t i = 0; i < static_cast<int64_t>(dy.size()); ++i) {
      float* cell = dx.data() + (i / g.out_size) * g.in_size + vision::ReduceBase(g, i % g.out_size);
      for (int64_t k = 0; k < g.count; ++k) cell[vision::ReduceOffset(g, k)] = vision::ReduceGradient(g, dy[i]);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

}  // namespace
}  // namespace ringtrain::gpu
