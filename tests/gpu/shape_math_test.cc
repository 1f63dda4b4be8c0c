// backends/cuda/shape_math.h on the host against the CPU kernels it mirrors (average and
// global pooling, zero padding, rescaling, concatenation, Add, Multiply). The CUDA kernels
// (src/backends/cuda/shape_kernels.cu) are thin loops over these functions, and CI has no
// GPU, so this is where their arithmetic is proven: each test runs the functions in the
// kernels' loops (one output or input element per iteration, the same index
// decomposition) on random data and expects the CPU kernel's bits.
#include "backends/cuda/shape_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/cpu_run.h"
#include "nn/layer.h"
#include "nn/layers/merge_layers.h"
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

// Values over many binades, both signs, some exact zeros: a sum in another order shows.
// step > 0: values from {-2, ..., 2} in steps of `step` instead (ties for the max).
std::vector<float> WideRandom(size_t n, uint32_t seed, float step = 0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-20, 6), sign(0, 1), zero(0, 63);
  std::uniform_int_distribution<int> grid(-4, 4);
  std::vector<float> v(n);
  for (float& x : v) {
    if (step > 0) {
      x = static_cast<float>(grid(gen)) * step;
    } else {
      x = zero(gen) == 0 ? 0.0f : std::ldexp(mant(gen), expo(gen)) * (sign(gen) ? 1.0f : -1.0f);
    }
  }
  return v;
}

// The model {input_shape, [layer, flatten]} built (a model ends with a vector), its
// first layer, and that layer's CPU kernel.
struct OneLayer {
  nn::internal::LayerGraph graph;
  nn::Layer* layer = nullptr;
  std::unique_ptr<nn::testing::CpuRun> run;
};

void Build(const json& layer, const json& input_shape, OneLayer* out) {
  json model = {{"input_shape", input_shape}, {"layers", json::array({layer, {{"type", "flatten"}}})}};
  const Status s = nn::internal::BuildLayerGraph(model, &out->graph);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out->graph.layers.size(), 2u);
  out->layer = out->graph.layers[0].get();
  out->run = std::make_unique<nn::testing::CpuRun>(*out->layer);
}

// ---------------------------------------------------------------- average pooling

struct PoolCase {
  const char* label;
  json layer;
  std::vector<int> shape;  // h, w, c
};

TEST(ShapeMathAvgPool, ForwardAndBackwardBitIdentical) {
  const std::vector<PoolCase> cases = {
      {"valid 2x2", {{"type", "average_pooling2d"}}, {8, 8, 3}},
      {"valid 2x2 odd input", {{"type", "average_pooling2d"}}, {7, 9, 2}},
      {"same 3x3 s2 (clipped windows)",
       {{"type", "average_pooling2d"}, {"pool_size", 3}, {"strides", 2}, {"padding", "same"}},
       {7, 8, 3}},
      {"same 2x2 s1", {{"type", "average_pooling2d"}, {"strides", 1}, {"padding", "same"}}, {5, 6, 4}},
      {"overlapping 3x3 s1", {{"type", "average_pooling2d"}, {"pool_size", 3}, {"strides", 1}}, {6, 6, 4}},
      {"same 3x2 s(2,3)",
       {{"type", "average_pooling2d"}, {"pool_size", {3, 2}}, {"strides", {2, 3}}, {"padding", "same"}},
       {10, 11, 2}},
      {"same 4x4 s1 (even window, pad before and after)",
       {{"type", "average_pooling2d"}, {"pool_size", 4}, {"strides", 1}, {"padding", "same"}},
       {6, 7, 3}},
      {"stride larger than the window", {{"type", "average_pooling2d"}, {"pool_size", 2}, {"strides", 3}}, {11, 8, 2}},
      {"same 5x5 s2 on a small input",
       {{"type", "average_pooling2d"}, {"pool_size", 5}, {"strides", 2}, {"padding", "same"}},
       {3, 4, 5}},
  };
  constexpr int kBatch = 3;
  uint32_t seed = 1;
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(c.label);
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build(c.layer, c.shape, &one));
    const ops::Window g = one.layer->op().window;
    ASSERT_EQ(g.h, c.shape[0]);
    const size_t in_size = g.in_size(), out_size = static_cast<size_t>(one.layer->output_size());
    const std::vector<float> x = WideRandom(kBatch * in_size, seed++);
    const std::vector<float> dy = WideRandom(kBatch * out_size, seed++);

    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(kBatch * out_size);
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      const shape::Nhwc o = shape::SplitNhwc(i, g.out_h, g.out_w, g.c);
      y[i] = shape::AvgPoolValue(g, x.data() + o.n * static_cast<int64_t>(in_size), o.h, o.w, o.c);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));

    const float* want_dx = one.run->Backward(dy.data(), true);
    std::vector<float> dx(kBatch * in_size);
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {
      const shape::Nhwc at = shape::SplitNhwc(i, g.h, g.w, g.c);
      dx[i] = shape::AvgPoolGather(g, dy.data() + at.n * static_cast<int64_t>(out_size), at.h, at.w, at.c);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

// The divisor is the window clipped to the input: brute force over every window cell.
TEST(ShapeMathAvgPool, CountIsTheClippedWindow) {
  ops::Window g;
  for (int h : {1, 4, 7}) {
    for (int k : {1, 2, 3, 5}) {
      for (int s : {1, 2, 3}) {
        for (int pad : {0, 1, 2}) {
          if (pad >= k) continue;
          g.h = g.w = h;
          g.c = 1;
          g.kh = g.kw = k;
          g.stride_h = g.stride_w = s;
          g.pad_top = g.pad_left = pad;
          g.out_h = g.out_w = (h + 2 * pad - k) / s + 1;
          for (int o = 0; o < g.out_h; ++o) {
            int inside = 0;
            for (int t = 0; t < k; ++t) {
              const int i = o * s - pad + t;
              inside += i >= 0 && i < h;
            }
            const shape::Cells cells = shape::AvgPoolCells(g, o, o);
            EXPECT_EQ(shape::AvgPoolCount(cells), static_cast<float>(inside * inside))
                << "h " << h << " k " << k << " s " << s << " pad " << pad << " o " << o;
            // And PoolCover inverts it: input i is covered by exactly the outputs whose windows hold it.
            for (int i = 0; i < h; ++i) {
              int lo, hi;
              shape::PoolCover(i, s, pad, k, g.out_h, &lo, &hi);
              const bool holds = i >= o * s - pad && i < o * s - pad + k;
              EXPECT_EQ(holds, o >= lo && o < hi) << "h " << h << " k " << k << " s " << s << " pad " << pad;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- global pooling

TEST(ShapeMathGlobalPool, MaxAndAverageBitIdentical) {
  struct Case {
    const char* label;
    const char* type;
    bool keepdims;
    std::vector<int> shape;
    float step;  // > 0: ties
  };
  const std::vector<Case> cases = {
      {"max", "global_max_pooling2d", false, {5, 6, 7}, 0},
      {"max keepdims ties", "global_max_pooling2d", true, {4, 4, 3}, 0.5f},
      {"max one pixel", "global_max_pooling2d", false, {1, 1, 4}, 0},
      {"average", "global_average_pooling2d", false, {5, 6, 7}, 0},
      {"average keepdims", "global_average_pooling2d", true, {7, 3, 2}, 0},
      {"average large", "global_average_pooling2d", false, {28, 28, 3}, 0},
  };
  constexpr int kBatch = 3;
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build({{"type", c.type}, {"keepdims", c.keepdims}}, c.shape, &one));
    const bool max = std::string(c.type) == "global_max_pooling2d";
    const int pixels = c.shape[0] * c.shape[1], channels = c.shape[2];
    ASSERT_EQ(one.layer->output_size(), channels);
    std::vector<float> x = WideRandom(static_cast<size_t>(kBatch) * pixels * channels, seed++, c.step);
    if (max && pixels > 1) {
      x[channels + 1] = NAN;                                // a NaN after pixel 0: never wins
      x[static_cast<size_t>(pixels) * channels + 2] = NAN;  // at pixel 0 of example 1: wins, keeps pixel 0
    }
    const std::vector<float> dy = WideRandom(static_cast<size_t>(kBatch) * channels, seed++);

    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(static_cast<size_t>(kBatch) * channels);
    std::vector<int32_t> arg(y.size());
    const int64_t per_example = static_cast<int64_t>(pixels) * channels;
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      const int64_t example = i / channels;
      const int ch = static_cast<int>(i % channels);
      y[i] = max ? shape::GlobalMaxValue(x.data() + example * per_example, pixels, channels, ch, &arg[i])
                 : shape::GlobalAvgValue(x.data() + example * per_example, pixels, channels, ch);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));

    const float* want_dx = one.run->Backward(dy.data(), true);
    std::vector<float> dx(x.size());
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {
      const int64_t example = i / per_example, rest = i % per_example;
      const int64_t o = example * channels + rest % channels;
      dx[i] = max ? shape::GlobalMaxGrad(dy[o], arg[o], static_cast<int>(rest / channels))
                  : shape::GlobalAvgGrad(dy[o], pixels);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

// ---------------------------------------------------------------- zero padding

TEST(ShapeMathZeroPadding, AsymmetricPaddingBitIdentical) {
  struct Case {
    json padding;
    std::vector<int> shape;
  };
  const std::vector<Case> cases = {
      {1, {4, 5, 3}},
      {{2, 1}, {3, 3, 2}},
      {{{1, 2}, {3, 0}}, {4, 5, 3}},
      {{{0, 3}, {0, 1}}, {2, 6, 1}},
  };
  constexpr int kBatch = 2;
  uint32_t seed = 200;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.padding.dump());
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build({{"type", "zero_padding2d"}, {"padding", c.padding}}, c.shape, &one));
    const ops::Op op = one.layer->op();
    const nn::Shape& os = one.layer->output_shape();
    const int in_h = c.shape[0], in_w = c.shape[1], ch = c.shape[2];
    const int64_t in_size = one.layer->input_size(), out_size = one.layer->output_size();
    const std::vector<float> x = WideRandom(static_cast<size_t>(kBatch * in_size), seed++);
    const std::vector<float> dy = WideRandom(static_cast<size_t>(kBatch * out_size), seed++);

    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(static_cast<size_t>(kBatch * out_size));
    for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
      const shape::Nhwc o = shape::SplitNhwc(i, os[0], os[1], ch);
      int ih, iw;
      const bool inside = shape::ZeroPadSource(o.h, o.w, op.window.pad_top, op.window.pad_left, in_h, in_w, &ih, &iw);
      y[i] = inside ? x[o.n * in_size + (static_cast<int64_t>(ih) * in_w + iw) * ch + o.c] : 0.0f;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, y.size(), "forward"));

    const float* want_dx = one.run->Backward(dy.data(), true);
    std::vector<float> dx(x.size());
    for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {
      const shape::Nhwc at = shape::SplitNhwc(i, in_h, in_w, ch);
      const int64_t oh = at.h + op.window.pad_top, ow = at.w + op.window.pad_left;
      dx[i] = dy[at.n * out_size + (oh * os[1] + ow) * ch + at.c];
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, dx.size(), "input gradient"));
  }
}

// ---------------------------------------------------------------- rescaling

TEST(ShapeMathRescaling, PerChannelBitIdentical) {
  const std::vector<json> layers = {
      {{"type", "rescaling"}, {"scale", 0.00392156862745098}},
      {{"type", "rescaling"}, {"scale", 2.0}, {"offset", -1.0}},
      {{"type", "rescaling"}, {"scale", {0.5, -1.25, 3.0}}, {"offset", {0.1, 0.0, -7.5}}},
  };
  constexpr int kBatch = 3;
  const std::vector<int> in_shape = {4, 5, 3};
  uint32_t seed = 300;
  for (const json& layer : layers) {
    SCOPED_TRACE(layer.dump());
    OneLayer one;
    ASSERT_NO_FATAL_FAILURE(Build(layer, in_shape, &one));
    const ops::Op op = one.layer->op();
    const int channels = static_cast<int>(op.scale_values.size());
    ASSERT_EQ(channels, 3);
    ASSERT_EQ(op.offset_values.size(), op.scale_values.size());
    const size_t n = static_cast<size_t>(kBatch * one.layer->output_size());
    const std::vector<float> x = WideRandom(n, seed++), dy = WideRandom(n, seed++);

    const float* want_y = one.run->Forward(x.data(), kBatch, true);
    std::vector<float> y(n), dx(n);
    for (size_t i = 0; i < n; ++i) {
      const int c = static_cast<int>(i % channels);
      y[i] = shape::Rescale(x[i], op.scale_values[c], op.offset_values[c]);
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, n, "forward"));
    const float* want_dx = one.run->Backward(dy.data(), true);
    for (size_t i = 0; i < n; ++i) dx[i] = shape::RescaleGrad(dy[i], op.scale_values[i % channels]);
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_dx, n, "input gradient"));
  }
}

// ---------------------------------------------------------------- concatenation

TEST(ShapeMathConcatenate, InputsOfDifferentSizesBitIdentical) {
  struct Case {
    const char* label;
    int keras_axis;
    std::vector<nn::Shape> in;
  };
  const std::vector<Case> cases = {
      {"channels of three", -1, {{4, 5, 2}, {4, 5, 3}, {4, 5, 1}}},
      {"height of two", 1, {{2, 3, 4}, {5, 3, 4}}},
      {"width of three", 2, {{3, 1, 2}, {3, 4, 2}, {3, 2, 2}}},
      {"flat vectors", 1, {{7}, {3}}},
      {"rank 2 axis -2", -2, {{2, 6}, {5, 6}, {1, 6}}},
  };
  constexpr int kBatch = 3;
  uint32_t seed = 400;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    auto made = nn::MergeLayer::CreateConcatenate({{"axis", c.keras_axis}}, "concat", c.in, "test");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    nn::Layer& layer = **made;
    nn::testing::CpuRun run(layer);
    const int axis = layer.op().axis;
    const int rank = static_cast<int>(c.in[0].size());
    std::vector<std::vector<float>> x;
    std::vector<const float*> xp;
    std::vector<int64_t> chunks, offsets;
    int64_t row_total = 0;
    for (const nn::Shape& s : c.in) {
      x.push_back(WideRandom(static_cast<size_t>(kBatch * nn::NumElements(s)), seed++));
      xp.push_back(x.back().data());
      chunks.push_back(shape::ConcatChunk(s.data(), rank, axis));
      offsets.push_back(row_total);
      row_total += chunks.back();
    }
    const int64_t rows = kBatch * shape::ConcatOuter(c.in[0].data(), axis);
    const size_t n = static_cast<size_t>(kBatch * layer.output_size());
    ASSERT_EQ(static_cast<int64_t>(n), rows * row_total);
    const std::vector<float> dy = WideRandom(n, seed++);

    const float* want_y = run.Forward(xp, kBatch, true);
    std::vector<float> y(n, NAN);
    for (size_t k = 0; k < c.in.size(); ++k) {
      for (int64_t i = 0; i < rows * chunks[k]; ++i) {
        y[shape::ConcatOutputIndex(i / chunks[k], i % chunks[k], row_total, offsets[k])] = x[k][i];
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, n, "forward"));

    std::vector<const float*> want_din(c.in.size(), nullptr);
    run.Backward(dy.data(), std::vector<bool>(c.in.size(), true), &want_din);
    for (size_t k = 0; k < c.in.size(); ++k) {
      std::vector<float> dx(static_cast<size_t>(rows * chunks[k]));
      for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {
        dx[i] = dy[shape::ConcatOutputIndex(i / chunks[k], i % chunks[k], row_total, offsets[k])];
      }
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_din[k], dx.size(), "input " + std::to_string(k)));
    }
  }
}

// ---------------------------------------------------------------- Add and Multiply
// The chain over arrays[0..count) at element i, as the kernel's loop.
float Chain(const std::vector<const float*>& arrays, size_t i, bool multiply) {
  float acc = arrays[0][i];
  for (size_t k = 1; k < arrays.size(); ++k) acc = shape::ChainStep(acc, arrays[k][i], multiply);
  return acc;
}

TEST(ShapeMathMerge, MultiplyOfTwoAndThreeBitIdentical) {
  const nn::Shape s = {4, 3, 5};
  constexpr int kBatch = 3;
  const size_t n = kBatch * static_cast<size_t>(nn::NumElements(s));
  for (int inputs : {2, 3, 5}) {
    SCOPED_TRACE(std::to_string(inputs) + " inputs");
    auto made = nn::MergeLayer::CreateMultiply(json::object(), "mul", std::vector<nn::Shape>(inputs, s), "test");
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    nn::Layer& layer = **made;
    nn::testing::CpuRun run(layer);
    std::vector<std::vector<float>> x;
    std::vector<const float*> xp;
    for (int k = 0; k < inputs; ++k) {
      x.push_back(WideRandom(n, 500 + k));
      xp.push_back(x.back().data());
    }
    const std::vector<float> dy = WideRandom(n, 599);
    const float* want_y = run.Forward(xp, kBatch, true);
    std::vector<float> y(n);
    for (size_t i = 0; i < n; ++i) y[i] = Chain(xp, i, true);
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, n, "forward"));

    std::vector<const float*> want_din(inputs, nullptr);
    run.Backward(dy.data(), std::vector<bool>(inputs, true), &want_din);
    for (int k = 0; k < inputs; ++k) {
      std::vector<const float*> chain = {dy.data()};  // the kernel's factors: dy, then the others in order
      for (int j = 0; j < inputs; ++j) {
        if (j != k) chain.push_back(xp[j]);
      }
      std::vector<float> dx(n);
      for (size_t i = 0; i < n; ++i) dx[i] = Chain(chain, i, true);
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_din[k], n, "input " + std::to_string(k)));
    }
  }
}

TEST(ShapeMathMerge, AddOfManyWithAndWithoutReluBitIdentical) {
  const nn::Shape s = {6, 7};
  constexpr int kBatch = 4;
  const size_t n = kBatch * static_cast<size_t>(nn::NumElements(s));
  for (int inputs : {2, 3, 4, 11}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(std::to_string(inputs) + " inputs" + (relu ? ", relu" : ""));
      auto made = nn::MergeLayer::CreateAdd(json::object(), "add", std::vector<nn::Shape>(inputs, s), "test");
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      nn::testing::CpuRun run(**made);
      if (relu) {
        ASSERT_TRUE(run.kernel().AbsorbRelu());
      }
      std::vector<std::vector<float>> x;
      std::vector<const float*> xp;
      for (int k = 0; k < inputs; ++k) {
        x.push_back(WideRandom(n, 600 + k));
        xp.push_back(x.back().data());
      }
      const std::vector<float> dy = WideRandom(n, 699);
      const float* want_y = run.Forward(xp, kBatch, true);
      std::vector<float> y(n);
      for (size_t i = 0; i < n; ++i) {
        const float v = Chain(xp, i, false);
        y[i] = relu ? shape::AddRelu(v) : v;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y.data(), want_y, n, "forward"));
      // The launches of eight arrays at a time (the running sum first in each later one)
      // give the same bits.
      std::vector<float> batched(n);
      for (size_t i = 0; i < n; ++i) {
        float acc = 0;
        size_t next = 0;
        while (next < xp.size()) {
          std::vector<const float*> part;
          if (next > 0) part.push_back(&acc);
          while (part.size() < 8 && next < xp.size()) part.push_back(xp[next++] + i);
          float v = part[0][0];
          for (size_t k = 1; k < part.size(); ++k) v = shape::ChainStep(v, part[k][0], false);
          acc = relu && next == xp.size() ? shape::AddRelu(v) : v;
        }
        batched[i] = acc;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(batched.data(), want_y, n, "forward in launches of eight"));

      std::vector<const float*> want_din(inputs, nullptr);
      run.Backward(dy.data(), std::vector<bool>(inputs, true), &want_din);
      std::vector<float> dx(n);
      for (size_t i = 0; i < n; ++i) dx[i] = relu ? shape::ReluMaskGrad(dy[i], y[i]) : dy[i];
      for (int k = 0; k < inputs; ++k) {
        ASSERT_NO_FATAL_FAILURE(ExpectSameBits(dx.data(), want_din[k], n, "input " + std::to_string(k)));
      }
    }
  }
}

}  // namespace
}  // namespace ringtrain::gpu
