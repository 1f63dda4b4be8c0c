// backends/cuda/random_math.h on the host against the CPU kernels, bit for bit: the GPU's
// Dropout and augmentation kernels (backends/cuda/random_kernels.cu) are thin loops over
// these functions, and CI has no GPU, so this is where their draws and arithmetic are
// proven. Each test drives the layer's CPU kernel (backends/cpu, through
// nn::testing::CpuRun: a training Forward in a StepContext, then Backward), reads what it
// drew (which elements Dropout zeroed; RandomFlip's flips, RandomCrop's offsets and the
// affine transforms from the CPU's draw functions, backends/cpu/augment_draws.h, which
// the kernels call) and what it computed, and compares them with the functions run as
// the CUDA kernels run them, for several seeds, steps and replicas. The keys and
// arguments come from the layers' ops (Layer::op), as the CUDA kernels get them.
#include "backends/cuda/random_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/augment_draws.h"
#include "backends/cpu/image_transform.h"
#include "common/splitmix.h"
#include "nn/cpu_run.h"
#include "nn/layer.h"
#include "nn/layers/dropout.h"
#include "nn/layers/random_affine.h"
#include "nn/layers/random_crop.h"
#include "nn/layers/random_flip.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// got[i] and want[i] have the same bits (NaNs included).
void ExpectSameBits(const float* got, const std::vector<float>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(Bits(got[i]), Bits(want[i])) << what << " differs at " << i << ": " << got[i] << " vs " << want[i];
  }
}

std::vector<float> Random(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// The steps the draws are compared in: seeds, steps and replicas (the last far out).
std::vector<nn::StepContext> Steps() {
  std::vector<nn::StepContext> v;
  const struct {
    uint64_t seed;
    int64_t step;
    int replica;
  } s[] = {{0, 0, 0}, {5, 3, 0}, {5, 3, 1}, {5, 4, 1}, {123456789, 1000, 3}, {~0ULL, int64_t{1} << 40, 7}};
  for (const auto& x : s) {
    nn::StepContext c;
    c.seed = x.seed;
    c.step = x.step;
    c.replica = x.replica;
    v.push_back(c);
  }
  return v;
}

rm::StepKey KeyOf(const nn::StepContext& c) {
  rm::StepKey s;
  s.seed = c.seed;
  s.step = c.step;
  s.replica = c.replica;
  return s;
}

std::string Describe(const nn::StepContext& c) {
  return "seed " + std::to_string(c.seed) + " step " + std::to_string(c.step) + " replica " +
         std::to_string(c.replica);
}

rm::ImageDims Dims(const nn::Shape& s) {
  rm::ImageDims d;
  d.height = s[0];
  d.width = s[1];
  d.channels = s[2];
  return d;
}

std::unique_ptr<nn::Layer> Make(StatusOr<std::unique_ptr<nn::Layer>> layer) {
  EXPECT_TRUE(layer.ok()) << layer.status().ToString();
  return layer.ok() ? std::move(layer).value() : nullptr;
}

// ---------------------------------------------------------------- generators

TEST(RandomMath, SplitMixAndRngAreTheCpus) {
  std::mt19937_64 gen(1);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t z = gen();
    ASSERT_EQ(rm::SplitMix64Finalize(z), SplitMix64Finalize(z)) << z;
  }
  for (uint64_t seed : {uint64_t{0}, uint64_t{5}, ~uint64_t{0}}) {
    for (uint64_t stream : {uint64_t{0}, uint64_t{1}, uint64_t{0xDEADBEEF}}) {
      Rng cpu(seed, stream), cpu_u(seed, stream);
      rm::Rng g = rm::MakeRng(seed, stream), g_u = rm::MakeRng(seed, stream);
      for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(rm::Next(&g), cpu.Next());
        ASSERT_EQ(Bits(rm::Uniform(&g_u)), Bits(cpu_u.Uniform()));
      }
    }
  }
}

// ---------------------------------------------------------------- Dropout

TEST(RandomMath, DropoutKeyAndKeepAreTheCpus) {
  for (const nn::StepContext& c : Steps()) {
    for (uint64_t hash : {uint64_t{0}, uint64_t{0xCBF29CE484222325ULL}}) {
      for (uint64_t seed : {uint64_t{0}, uint64_t{77}}) {
        const uint64_t key = rm::DropoutStreamKey(c.seed, c.step, c.replica, hash, seed);
        ASSERT_EQ(key, backends::cpu::DropoutStreamKey(c.seed, c.step, c.replica, hash, seed));
        for (uint64_t i = 0; i < 2000; ++i) {
          for (float rate : {0.0f, 0.1f, 0.5f, 0.99f}) {
            ASSERT_EQ(rm::DropoutKeep(key, i, rate), backends::cpu::DropoutKeep(key, i, rate));
          }
        }
      }
    }
  }
}

TEST(RandomMath, DropoutDropsTheLayersUnits) {
  const nn::Shape shape = {6, 5, 4};
  const int batch = 7;
  const size_t n = static_cast<size_t>(batch) * 6 * 5 * 4;
  const std::vector<float> x = Random(n, 2, 0.5f, 1.5f);  // no zeros: a dropped unit shows
  const std::vector<float> dy = Random(n, 3);
  for (double rate : {0.25, 0.5, 0.1, 0.9}) {
    for (const json& seed : {json(nullptr), json(7), json(0), json(-3)}) {
      json j = {{"type", "dropout"}, {"rate", rate}, {"seed", seed}};
      std::unique_ptr<nn::Layer> layer = Make(nn::Dropout::Create(j, "drop_" + seed.dump(), shape, "t"));
      ASSERT_NE(layer, nullptr);
      const ops::Op op = layer->op();
      ASSERT_EQ(op.kind, ops::OpKind::kDropout);
      nn::testing::CpuRun run(*layer);
      for (const nn::StepContext& c : Steps()) {
        SCOPED_TRACE("rate " + std::to_string(rate) + " seed " + seed.dump() + " " + Describe(c));
        run.ctx = c;
        const float* y = run.Forward(x.data(), batch, true);
        const uint64_t key = rm::DropoutStreamKey(c.seed, c.step, c.replica, op.name_hash, op.layer_seed);
        std::vector<float> want(n), want_din(n);
        size_t dropped = 0, layer_dropped = 0;
        for (size_t i = 0; i < n; ++i) {
          want[i] = rm::DropoutApply(x[i], key, i, op.rate, op.dropout_scale);
          want_din[i] = rm::DropoutApply(dy[i], key, i, op.rate, op.dropout_scale);
          dropped += want[i] == 0.0f;
          layer_dropped += y[i] == 0.0f;
        }
        EXPECT_EQ(dropped, layer_dropped);
        EXPECT_GT(dropped, 0u);
        EXPECT_LT(dropped, n);
        ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y, want, "output"));
        ASSERT_NO_FATAL_FAILURE(ExpectSameBits(run.Backward(dy.data(), true), want_din, "input gradient"));
      }
      // Inference: the identity, as the kernel passes its input through.
      EXPECT_EQ(run.Forward(x.data(), batch, false), x.data());
    }
  }
}

// ---------------------------------------------------------------- RandomFlip

TEST(RandomMath, FlipsAreTheCpus) {
  const nn::Shape shape = {5, 7, 3};
  const rm::ImageDims d = Dims(shape);
  const int batch = 16;
  const size_t per = static_cast<size_t>(d.size()), n = batch * per;
  const std::vector<float> x = Random(n, 4), dy = Random(n, 5);
  for (const char* mode : {"horizontal", "vertical", "horizontal_and_vertical"}) {
    for (const json& seed : {json(nullptr), json(11)}) {
      json j = {{"type", "random_flip"}, {"mode", mode}, {"seed", seed}};
      std::unique_ptr<nn::Layer> layer = Make(nn::RandomFlip::Create(j, "flip", shape, "t"));
      ASSERT_NE(layer, nullptr);
      nn::testing::CpuRun run(*layer);
      const ops::Op op = layer->op();
      ASSERT_EQ(op.kind, ops::OpKind::kRandomFlip);
      EXPECT_EQ(op.flip_horizontal, std::string(mode) != "vertical");
      EXPECT_EQ(op.flip_vertical, std::string(mode) != "horizontal");
      int outcomes = 0;
      for (const nn::StepContext& c : Steps()) {
        SCOPED_TRACE(std::string(mode) + " seed " + seed.dump() + " " + Describe(c));
        run.ctx = c;
        const float* y = run.Forward(x.data(), batch, true);
        std::vector<float> want(n), want_din(n);
        for (int b = 0; b < batch; ++b) {
          const int f = rm::DrawFlips(KeyOf(c), op.key, b, op.flip_horizontal, op.flip_vertical);
          ASSERT_EQ(f, backends::cpu::DrawFlips(c, op.key, b, op.flip_horizontal, op.flip_vertical))
              << "example " << b;
          outcomes |= 1 << f;
          for (size_t i = 0; i < per; ++i) {
            want[b * per + i] = x[b * per + rm::FlipSource(static_cast<int64_t>(i), d, f)];
            want_din[b * per + i] = dy[b * per + rm::FlipSource(static_cast<int64_t>(i), d, f)];
          }
        }
        ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y, want, "output"));
        ASSERT_NO_FATAL_FAILURE(ExpectSameBits(run.Backward(dy.data(), true), want_din, "input gradient"));
      }
      // Every outcome the mode allows shows up.
      EXPECT_EQ(outcomes, std::string(mode) == "horizontal" ? 0x3 : std::string(mode) == "vertical" ? 0x5 : 0xF);
      EXPECT_EQ(run.Forward(x.data(), batch, false), x.data());
    }
  }
}

// ---------------------------------------------------------------- RandomCrop

TEST(RandomMath, CropOffsetsAreTheCpus) {
  struct Case {
    nn::Shape shape;
    int height, width;
  };
  const Case cases[] = {{{10, 12, 3}, 7, 9}, {{28, 28, 1}, 24, 24}, {{6, 10, 2}, 6, 8}, {{9, 5, 2}, 2, 5}};
  const int batch = 12;
  for (const Case& k : cases) {
    const rm::ImageDims in = Dims(k.shape);
    const size_t per_in = static_cast<size_t>(in.size());
    const size_t per_out = static_cast<size_t>(k.height) * k.width * in.channels;
    const std::vector<float> x = Random(batch * per_in, 6), dy = Random(batch * per_out, 7);
    json j = {{"type", "random_crop"}, {"height", k.height}, {"width", k.width}};
    std::unique_ptr<nn::Layer> layer = Make(nn::RandomCrop::Create(j, "crop", k.shape, "t"));
    ASSERT_NE(layer, nullptr);
    nn::testing::CpuRun run(*layer);
    const ops::Op op = layer->op();
    ASSERT_EQ(op.kind, ops::OpKind::kRandomCrop);
    ASSERT_EQ(op.crop_height, k.height);
    ASSERT_EQ(op.crop_width, k.width);
    for (const nn::StepContext& c : Steps()) {
      SCOPED_TRACE(std::to_string(k.height) + "x" + std::to_string(k.width) + " " + Describe(c));
      run.ctx = c;
      const float* y = run.Forward(x.data(), batch, true);
      std::vector<float> want(batch * per_out), want_din(batch * per_in);
      for (int b = 0; b < batch; ++b) {
        int h0 = -1, w0 = -1, cpu_h0 = -2, cpu_w0 = -2;
        rm::DrawCropOffsets(KeyOf(c), op.key, b, in, op.crop_height, op.crop_width, &h0, &w0);
        backends::cpu::DrawCropOffsets(c, op.key, b, in.height, in.width, op.crop_height, op.crop_width, &cpu_h0,
                                       &cpu_w0);
        ASSERT_EQ(h0, cpu_h0) << "example " << b;
        ASSERT_EQ(w0, cpu_w0) << "example " << b;
        for (size_t i = 0; i < per_out; ++i) {
          want[b * per_out + i] = x[b * per_in + rm::CropSource(static_cast<int64_t>(i), in, k.width, h0, w0)];
        }
        for (size_t i = 0; i < per_in; ++i) {
          const int64_t t = rm::CropTarget(static_cast<int64_t>(i), in, k.height, k.width, h0, w0);
          want_din[b * per_in + i] = t >= 0 ? dy[b * per_out + t] : 0.0f;
        }
      }
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y, want, "output"));
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(run.Backward(dy.data(), true), want_din, "input gradient"));
    }
  }
}

// The deterministic path: the centred window, copied when it has the target's size,
// else resized (inference; training with an input smaller than the target).
TEST(RandomMath, CropWindowAndResizeAreTheCpus) {
  struct Case {
    nn::Shape shape;
    int height, width;
    bool training;
  };
  const Case cases[] = {
      {{10, 12, 3}, 6, 6, false}, {{10, 12, 3}, 7, 9, false}, {{6, 10, 2}, 6, 8, false}, {{28, 28, 1}, 24, 20, false},
      {{5, 6, 2}, 8, 7, true},    {{4, 9, 3}, 6, 4, true},    {{3, 3, 1}, 7, 5, true},   {{1, 1, 2}, 3, 2, true},
  };
  const int batch = 3;
  nn::StepContext c;
  c.seed = 5;
  c.step = 3;
  for (const Case& k : cases) {
    SCOPED_TRACE(std::to_string(k.shape[0]) + "x" + std::to_string(k.shape[1]) + " -> " + std::to_string(k.height) +
                 "x" + std::to_string(k.width) + (k.training ? " training" : " inference"));
    const rm::ImageDims in = Dims(k.shape);
    const size_t per_in = static_cast<size_t>(in.size());
    const size_t per_out = static_cast<size_t>(k.height) * k.width * in.channels;
    const std::vector<float> x = Random(batch * per_in, 8), dy = Random(batch * per_out, 9);
    json j = {{"type", "random_crop"}, {"height", k.height}, {"width", k.width}};
    std::unique_ptr<nn::Layer> layer = Make(nn::RandomCrop::Create(j, "crop", k.shape, "t"));
    ASSERT_NE(layer, nullptr);
    nn::testing::CpuRun run(*layer);
    run.ctx = c;
    const rm::CropBox box = rm::CenteredBox(in, k.height, k.width);
    const float* y = run.Forward(x.data(), batch, k.training);
    std::vector<float> want(batch * per_out), want_din(batch * per_in);
    for (int b = 0; b < batch; ++b) {
      for (size_t i = 0; i < per_out; ++i) {
        const int64_t j = static_cast<int64_t>(i);
        want[b * per_out + i] = box.is_target ? x[b * per_in + rm::CropSource(j, in, k.width, box.h0, box.w0)]
                                              : rm::ResizeElement(x.data() + b * per_in, in, box, k.height, k.width, j);
      }
      for (int64_t ch = 0; ch < in.channels; ++ch) {
        rm::ResizeAdjointChannel(dy.data() + b * per_out, in, box, k.height, k.width, ch, want_din.data() + b * per_in);
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y, want, "output"));
    if (k.training) {
      ASSERT_FALSE(box.is_target);
      ASSERT_NO_FATAL_FAILURE(ExpectSameBits(run.Backward(dy.data(), true), want_din, "input gradient"));
    }
  }
}

// ---------------------------------------------------------------- RandomTranslation, RandomRotation

TEST(RandomMath, MapCoordinateIsTheCpus) {
  const struct {
    backends::cpu::FillMode cpu;
    rm::FillMode gpu;
  } modes[] = {{backends::cpu::FillMode::kReflect, rm::FillMode::kReflect},
               {backends::cpu::FillMode::kWrap, rm::FillMode::kWrap},
               {backends::cpu::FillMode::kConstant, rm::FillMode::kConstant},
               {backends::cpu::FillMode::kNearest, rm::FillMode::kNearest}};
  std::vector<float> coords = Random(4000, 10, -60.0f, 60.0f);
  for (float v : {0.0f, -0.0f, -0.5f, 0.5f, -1.0f, 4.0f, 5.0f, -5.0f, 9.5f, 1e30f, -1e30f,
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    coords.push_back(v);
  }
  for (const auto& m : modes) {
    for (int64_t len : {1, 2, 5, 28}) {
      for (float v : coords) {
        ASSERT_EQ(Bits(rm::MapCoordinate(m.gpu, v, len)), Bits(backends::cpu::MapCoordinate(m.cpu, v, len)))
            << "mode " << static_cast<int>(m.gpu) << " len " << len << " coordinate " << v;
      }
    }
  }
}

struct AffineCase {
  bool rotation;
  json args;  // the factors
  const char* fill_mode;
  const char* interpolation;
  float fill_value;
};

void CheckAffine(const AffineCase& k, const nn::Shape& shape, int batch) {
  const rm::ImageDims d = Dims(shape);
  const size_t per = static_cast<size_t>(d.size()), n = batch * per;
  const std::vector<float> x = Random(n, 14), dy = Random(n, 15);
  json j = k.args;
  j["fill_mode"] = k.fill_mode;
  j["interpolation"] = k.interpolation;
  j["fill_value"] = k.fill_value;
  std::unique_ptr<nn::Layer> layer =
      Make(k.rotation ? nn::RandomAffine::CreateRotation(j, "affine", shape, "t")
                      : nn::RandomAffine::CreateTranslation(j, "affine", shape, "t"));
  ASSERT_NE(layer, nullptr);
  nn::testing::CpuRun run(*layer);
  const ops::Op op = layer->op();
  ASSERT_EQ(op.kind, k.rotation ? ops::OpKind::kRandomRotation : ops::OpKind::kRandomTranslation);
  ASSERT_EQ(op.fill_value, k.fill_value);
  ASSERT_EQ(op.interpolation == rm::Interpolation::kNearest, std::string(k.interpolation) == "nearest");
  const char* mode_names[] = {"reflect", "wrap", "constant", "nearest"};
  ASSERT_EQ(std::string(mode_names[static_cast<int>(op.fill_mode)]), k.fill_mode);
  for (const nn::StepContext& c : Steps()) {
    SCOPED_TRACE(std::string(k.rotation ? "rotation " : "translation ") + k.args.dump() + " " + k.fill_mode + " " +
                 k.interpolation + " " + Describe(c));
    run.ctx = c;
    const float* y = run.Forward(x.data(), batch, true);
    std::vector<float> want(n), want_din(n);
    for (int b = 0; b < batch; ++b) {
      float t[8], cpu_t[8];
      backends::cpu::DrawAffineTransform(c, op, d.height, d.width, b, cpu_t);
      if (k.rotation) {
        rm::DrawRotation(KeyOf(c), op.key, b, d, op.angle_factor_lo, op.angle_factor_hi, t);
      } else {
        rm::DrawTranslation(KeyOf(c), op.key, b, d, op.height_factor_lo, op.height_factor_hi, op.width_factor_lo,
                            op.width_factor_hi, t);
      }
      for (int q = 0; q < 8; ++q) ASSERT_EQ(Bits(t[q]), Bits(cpu_t[q])) << "example " << b << " t" << q;
      for (size_t i = 0; i < per; ++i) {
        want[b * per + i] = rm::AffineElement(t, x.data() + b * per, d, op.fill_mode, op.interpolation, op.fill_value,
                                              static_cast<int64_t>(i));
      }
      for (int64_t ch = 0; ch < d.channels; ++ch) {
        rm::AffineAdjointChannel(t, dy.data() + b * per, d, op.fill_mode, op.interpolation, ch,
                                 want_din.data() + b * per);
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(y, want, "output"));
    ASSERT_NO_FATAL_FAILURE(ExpectSameBits(run.Backward(dy.data(), true), want_din, "input gradient"));
  }
  EXPECT_EQ(run.Forward(x.data(), batch, false), x.data());
}

TEST(RandomMath, RotationsAreTheCpus) {
  const AffineCase cases[] = {
      {true, {{"factor", 0.1}}, "reflect", "bilinear", 0.0f},
      {true, {{"factor", json::array({-0.25, 0.05})}}, "wrap", "bilinear", 0.0f},
      {true, {{"factor", 0.5}}, "constant", "bilinear", 0.5f},
      {true, {{"factor", 0.2}}, "nearest", "bilinear", 0.0f},
      {true, {{"factor", 1.0}}, "reflect", "nearest", 0.0f},
      {true, {{"factor", 0.3}}, "constant", "nearest", -1.0f},
      {true, {{"factor", json::array({0.1, 0.1})}}, "wrap", "nearest", 0.0f},
  };
  for (const AffineCase& k : cases) {
    ASSERT_NO_FATAL_FAILURE(CheckAffine(k, {9, 11, 3}, 6));
    ASSERT_NO_FATAL_FAILURE(CheckAffine(k, {8, 8, 1}, 3));
  }
}

TEST(RandomMath, TranslationsAreTheCpus) {
  const AffineCase cases[] = {
      {false, {{"height_factor", 0.2}, {"width_factor", 0.2}}, "reflect", "bilinear", 0.0f},
      {false, {{"height_factor", json::array({-0.3, 0.1})}, {"width_factor", 0.5}}, "wrap", "bilinear", 0.0f},
      {false, {{"height_factor", 1.0}, {"width_factor", 1.0}}, "constant", "bilinear", 0.25f},
      {false, {{"height_factor", 0.4}, {"width_factor", json::array({0.0, 0.3})}}, "nearest", "bilinear", 0.0f},
      {false, {{"height_factor", 0.25}, {"width_factor", 0.25}}, "reflect", "nearest", 0.0f},
      {false, {{"height_factor", 0.6}, {"width_factor", 0.1}}, "constant", "nearest", 2.0f},
  };
  for (const AffineCase& k : cases) {
    ASSERT_NO_FATAL_FAILURE(CheckAffine(k, {9, 11, 3}, 6));
    ASSERT_NO_FATAL_FAILURE(CheckAffine(k, {1, 5, 2}, 2));  // one row: the fill modes' len <= 1 branches
  }
}

}  // namespace
}  // namespace ringtrain::gpu
