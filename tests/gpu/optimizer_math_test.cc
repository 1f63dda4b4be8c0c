// backends/cuda/optimizer_math.h on the host against the CPU optimizers and regularizers.
// The GPU's optimizer kernels (src/backends/cuda/optimizer_kernels.cu) are thin loops over
// these functions and CI has no GPU, so this is where their arithmetic is proven: each
// test runs the functions in the kernels' loops (the same pieces, the same reduction
// order, GpuOptimizer's step scalars) and compares the result bit for bit with
// nn::Optimizer::Apply, step after step, for every optimizer and option.
#include "backends/cuda/optimizer_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/kernels.h"
#include "nn/model.h"
#include "nn/model_regularization.h"
#include "nn/optimizers/adagrad.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/nadam.h"
#include "nn/optimizers/optimizer.h"
#include "nn/optimizers/rmsprop.h"
#include "nn/optimizers/sgd.h"
#include "nn/regularizers/regularizer.h"

namespace ringtrain::gpu {
namespace {

template <typename T>
void ExpectSameBits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0) << what << " differs at " << i << ": " << got[i]
                                                             << " vs " << want[i];
  }
}

void ExpectSameBits(double got, double want, const std::string& what) {
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(double)), 0) << what << ": " << got << " vs " << want;
}

// Values over many binades, both signs, some exact zeros, times `scale`.
std::vector<float> WideRandom(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-20, 0), sign(0, 1), zero(0, 63);
  std::vector<float> v(n);
  for (float& x : v) {
    x = zero(gen) == 0 ? 0.0f : std::ldexp(mant(gen), expo(gen)) * (sign(gen) ? scale : -scale);
  }
  return v;
}

// ---------------------------------------------------------------- sums of squares

TEST(OptimizerMath, ChunkedSumOfSquaresIsKernelsSumSquares) {
  const auto g = WideRandom(100000, 1, 3.0f);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{16383}, size_t{16384}, size_t{16385}, size_t{40000},
                   size_t{100000}}) {
    std::vector<om::Chunk> chunks;
    om::AppendChunks(0, static_cast<int64_t>(n), 0, &chunks);
    std::vector<double> partial;
    for (const om::Chunk& c : chunks) partial.push_back(om::SumSquares(g.data() + c.offset, c.count));
    const double got = om::VariableSum(partial.data(), 0, static_cast<int64_t>(partial.size()));
    ExpectSameBits(got, kernels::SumSquares(g.data(), n), "sum of squares of " + std::to_string(n));
  }
}

TEST(OptimizerMath, VariableChunksTileOrFallBackToOneVariable) {
  std::vector<om::Chunk> chunks;
  std::vector<int64_t> first;
  om::BuildVariableChunks({{0, 5}, {5, 40000}, {40005, 0}, {40005, 3}}, 40008, &chunks, &first);
  ASSERT_EQ(first, (std::vector<int64_t>{0, 1, 4, 4, 5}));
  EXPECT_EQ(chunks[1].offset, 5);
  EXPECT_EQ(chunks[1].count, 16384);
  EXPECT_EQ(chunks[3].offset, 5 + 2 * 16384);
  EXPECT_EQ(chunks[3].count, 40000 - 2 * 16384);
  EXPECT_EQ(chunks[4].segment, 3);
  // A gap, an overlap, a short cover, none: the buffer as one variable (as Optimizer::Apply).
  for (const std::vector<om::Span>& bad : {std::vector<om::Span>{{0, 5}, {6, 40002}},
                                           std::vector<om::Span>{{0, 5}, {4, 40004}},
                                           std::vector<om::Span>{{0, 40007}}, std::vector<om::Span>{}}) {
    om::BuildVariableChunks(bad, 40008, &chunks, &first);
    EXPECT_EQ(first, (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(chunks.back().offset + chunks.back().count, 40008);
  }
}

// ---------------------------------------------------------------- optimizers
// A configuration, as the job's JSON would give it.
struct Case {
  std::string label;
  std::string type;  // sgd, adam, adamw, rmsprop, adagrad, nadam
  double lr = 0.01, momentum = 0, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7, rho = 0.9, initial = 0.1;
  bool nesterov = false, amsgrad = false, centered = false;
  std::optional<double> weight_decay;
  nn::GradientClip clip;
  int64_t start_iteration = 0;
  bool nan_gradient = false;  // one gradient element is NaN
};

std::unique_ptr<nn::Optimizer> MakeHost(const Case& c) {
  const nn::OptimizerOptions o{c.weight_decay, c.clip};
  if (c.type == "sgd") return std::make_unique<nn::Sgd>(c.lr, c.momentum, c.nesterov, o);
  if (c.type == "adam" || c.type == "adamw") {
    return std::make_unique<nn::Adam>(c.lr, c.beta_1, c.beta_2, c.epsilon, c.amsgrad, o, c.type);
  }
  if (c.type == "rmsprop") return std::make_unique<nn::Rmsprop>(c.lr, c.rho, c.momentum, c.epsilon, c.centered, o);
  if (c.type == "adagrad") return std::make_unique<nn::Adagrad>(c.lr, c.initial, c.epsilon, o);
  return std::make_unique<nn::Nadam>(c.lr, c.beta_1, c.beta_2, c.epsilon, o);
}

// GpuOptimizer's step description (optimizer_kernels.cc, NextStep) for the host optimizer
// `host` (the engine's: never applied, its learning rate and iterations set from outside),
// with the slots in host memory.
om::StepArgs StepArgsFor(const Case& c, nn::Optimizer* host, std::vector<std::vector<float>>* slots,
                         std::vector<float>* clip_factor) {
  om::StepArgs a;
  auto slot = [&](size_t i) { return slots->size() > i ? (*slots)[i].data() : nullptr; };
  a.s0 = slot(0);
  a.s1 = slot(1);
  a.s2 = slot(2);
  const double lr = host->learning_rate();
  if (c.type == "sgd") {
    a.rule = c.momentum == 0.0 ? om::Rule::kSgd : (c.nesterov ? om::Rule::kNesterov : om::Rule::kMomentum);
    a.lr = static_cast<float>(lr);
    a.momentum = static_cast<float>(c.momentum);
  } else if (c.type == "adam" || c.type == "adamw") {
    a.rule = c.amsgrad ? om::Rule::kAmsgrad : om::Rule::kAdam;
    const nn::Adam::StepScalars s = static_cast<nn::Adam*>(host)->NextStepScalars();
    a.alpha = s.alpha;
    a.one_minus_b1 = s.one_minus_b1;
    a.one_minus_b2 = s.one_minus_b2;
    a.epsilon = s.epsilon;
  } else if (c.type == "rmsprop") {
    a.rule = om::Rule::kRmsprop;
    a.rmsprop = om::RmspropStepScalars(lr, c.rho, c.momentum, c.epsilon);
    a.s1 = c.momentum > 0 ? slot(1) : nullptr;
    a.s2 = c.centered ? slot(c.momentum > 0 ? 2 : 1) : nullptr;
  } else if (c.type == "adagrad") {
    a.rule = om::Rule::kAdagrad;
    a.lr = static_cast<float>(lr);
    a.epsilon = static_cast<float>(c.epsilon);
  } else {
    a.rule = om::Rule::kNadam;
    const int64_t t = host->iterations() + 1;
    a.nadam = om::NadamStepScalars(lr, c.beta_1, c.beta_2, c.epsilon, t, static_cast<nn::Nadam*>(host)->UProduct(t));
  }
  a.clip_value = static_cast<float>(c.clip.value);
  switch (c.clip.mode) {
    case nn::GradientClip::Mode::kNone: a.clip = om::Clip::kNone; break;
    case nn::GradientClip::Mode::kValue: a.clip = om::Clip::kValue; break;
    case nn::GradientClip::Mode::kNorm:
      a.clip = om::Clip::kNorm;
      a.clip_div = clip_factor->data();
      break;
    case nn::GradientClip::Mode::kGlobalNorm:
      a.clip = om::Clip::kGlobalNorm;
      a.clip_scale = clip_factor->data();
      break;
  }
  if (c.weight_decay.has_value()) {
    a.decay = true;
    a.weight_decay = static_cast<float>(*c.weight_decay);
    a.decay_lr = static_cast<float>(lr);
  }
  return a;
}

// The GPU's Apply on the host: the kernels' loops (optimizer_kernels.cu) over the same table.
void DeviceApply(om::StepArgs a, const std::vector<om::Chunk>& chunks, const std::vector<int64_t>& var_first,
                 std::vector<float>* clip_factor, float* p, const float* g) {
  if (a.clip == om::Clip::kNorm || a.clip == om::Clip::kGlobalNorm) {
    std::vector<double> partial(chunks.size());
    for (size_t c = 0; c < chunks.size(); ++c) partial[c] = om::SumSquares(g + chunks[c].offset, chunks[c].count);
    const int64_t num_vars = static_cast<int64_t>(var_first.size()) - 1;
    if (a.clip == om::Clip::kNorm) {
      for (int64_t v = 0; v < num_vars; ++v) {
        (*clip_factor)[v] = om::ClipNormDivisor(om::VariableSum(partial.data(), var_first[v], var_first[v + 1]),
                                                a.clip_value);
      }
    } else {
      (*clip_factor)[0] = om::GlobalClipScale(om::GlobalSum(partial.data(), var_first.data(), num_vars),
                                              a.clip_value);
    }
  }
  for (const om::Chunk& ch : chunks) {
    for (int64_t i = ch.offset; i < ch.offset + ch.count; ++i) {
      p[i] = om::UpdateElement(a, i, om::ClippedGradient(a, g[i], ch.segment), p[i]);
    }
  }
}

// Variables of several sizes (pieces of 16384 inside, a zero-size one) and their spans.
const std::vector<size_t> kVariableSizes = {3000, 40000, 0, 7, 16384, 20001};

nn::GradientClip Clip(nn::GradientClip::Mode mode, double value) {
  nn::GradientClip c;
  c.mode = mode;
  c.value = value;
  return c;
}

void RunCase(const Case& c, const std::vector<size_t>& sizes, bool tiling_spans) {
  SCOPED_TRACE(c.label);
  std::vector<nn::VariableSpan> vars;
  std::vector<om::Span> spans;
  size_t n = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    vars.push_back({"w" + std::to_string(k), n, sizes[k]});
    spans.push_back({static_cast<int64_t>(n), static_cast<int64_t>(sizes[k])});
    n += sizes[k];
  }
  if (!tiling_spans) {  // a gap after the first variable: Apply clips the buffer as one
    vars[1].offset += 1;
    vars[1].count -= 1;
    spans[1].offset += 1;
    spans[1].count -= 1;
  }
  std::unique_ptr<nn::Optimizer> cpu = MakeHost(c), host = MakeHost(c);
  cpu->SetVariables(vars);
  host->SetVariables(vars);
  cpu->Build(n);  // untiled spans do not add up to n
  host->Build(n);
  cpu->set_iterations(c.start_iteration);
  host->set_iterations(c.start_iteration);

  // The device's copy of the state: the host's initial slots, as the engine loads them.
  std::vector<std::vector<float>> slots;
  for (auto& [name, buffer] : host->state()) {
    ASSERT_EQ(buffer->size(), n) << name;
    slots.push_back(*buffer);
  }
  std::vector<om::Chunk> chunks;
  std::vector<int64_t> var_first;
  const bool norm = c.clip.mode == nn::GradientClip::Mode::kNorm || c.clip.mode == nn::GradientClip::Mode::kGlobalNorm;
  om::BuildVariableChunks(norm ? spans : std::vector<om::Span>{}, static_cast<int64_t>(n), &chunks, &var_first);
  std::vector<float> clip_factor(var_first.size());

  auto cpu_p = WideRandom(n, 7, 2.0f);
  auto dev_p = cpu_p;
  for (int step = 0; step < 4; ++step) {
    // Gradients of different sizes per variable, so that clipnorm clips some and not others.
    std::vector<float> g = WideRandom(n, 100 + step, step % 2 == 0 ? 1.0f : 1e-3f);
    for (size_t i = 0; i < std::min<size_t>(n, 3000); ++i) g[i] *= 1e-4f;
    if (c.nan_gradient) g[n / 2] = std::numeric_limits<float>::quiet_NaN();
    // A schedule moves the learning rate between steps.
    const double lr = c.lr * (1.0 - 0.1 * step);
    cpu->set_learning_rate(lr);
    host->set_learning_rate(lr);

    cpu->Apply(cpu_p.data(), g.data(), n);
    DeviceApply(StepArgsFor(c, host.get(), &slots, &clip_factor), chunks, var_first, &clip_factor, dev_p.data(),
                g.data());
    host->set_iterations(host->iterations() + 1);

    const std::string at = " after step " + std::to_string(step + 1);
    ExpectSameBits(dev_p, cpu_p, "params" + at);
    auto state = cpu->state();
    ASSERT_EQ(state.size(), slots.size());
    for (size_t s = 0; s < slots.size(); ++s) ExpectSameBits(slots[s], *state[s].second, state[s].first + at);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

std::vector<Case> AllCases() {
  using M = nn::GradientClip::Mode;
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };
  add({.label = "sgd", .type = "sgd", .lr = 0.1});
  add({.label = "sgd momentum", .type = "sgd", .lr = 0.05, .momentum = 0.9});
  add({.label = "sgd nesterov", .type = "sgd", .lr = 0.05, .momentum = 0.8, .nesterov = true});
  add({.label = "adam", .type = "adam", .lr = 0.001});
  add({.label = "adam amsgrad", .type = "adam", .lr = 0.002, .beta_1 = 0.8, .beta_2 = 0.99, .amsgrad = true});
  add({.label = "adamw", .type = "adamw", .lr = 0.001, .weight_decay = 0.004});
  add({.label = "adamw amsgrad", .type = "adamw", .lr = 0.003, .amsgrad = true, .weight_decay = 0.1});
  add({.label = "rmsprop", .type = "rmsprop", .lr = 0.001});
  add({.label = "rmsprop momentum", .type = "rmsprop", .lr = 0.001, .momentum = 0.9});
  add({.label = "rmsprop centered", .type = "rmsprop", .lr = 0.002, .rho = 0.8, .centered = true});
  add({.label = "rmsprop momentum centered", .type = "rmsprop", .lr = 0.001, .momentum = 0.5, .epsilon = 1e-6,
       .centered = true});
  add({.label = "adagrad", .type = "adagrad", .lr = 0.01});
  add({.label = "adagrad zero start", .type = "adagrad", .lr = 0.02, .epsilon = 1e-5, .initial = 0.0});
  add({.label = "nadam", .type = "nadam", .lr = 0.001});
  add({.label = "nadam late (u_product's tail)", .type = "nadam", .lr = 0.002, .beta_1 = 0.85,
       .start_iteration = 19998});
  add({.label = "adam late", .type = "adam", .lr = 0.001, .start_iteration = 123456});
  // Every option on several rules.
  for (const char* type : {"sgd", "adam", "rmsprop", "adagrad", "nadam"}) {
    const std::string t = type;
    const double momentum = t == "sgd" || t == "rmsprop" ? 0.9 : 0.0;
    add({.label = t + " clipnorm", .type = t, .lr = 0.01, .momentum = momentum, .clip = Clip(M::kNorm, 1.0)});
    add({.label = t + " global_clipnorm", .type = t, .lr = 0.01, .momentum = momentum,
         .clip = Clip(M::kGlobalNorm, 5.0)});
    add({.label = t + " clipvalue", .type = t, .lr = 0.01, .momentum = momentum, .clip = Clip(M::kValue, 0.25)});
    add({.label = t + " weight_decay", .type = t, .lr = 0.01, .momentum = momentum, .weight_decay = 0.01});
    add({.label = t + " clipnorm weight_decay", .type = t, .lr = 0.01, .momentum = momentum, .weight_decay = 0.5,
         .clip = Clip(M::kNorm, 0.3)});
  }
  add({.label = "sgd global_clipnorm unclipped", .type = "sgd", .lr = 0.1, .clip = Clip(M::kGlobalNorm, 1e6)});
  add({.label = "sgd clipnorm large", .type = "sgd", .lr = 0.1, .clip = Clip(M::kNorm, 1e3)});
  add({.label = "adam clipnorm NaN", .type = "adam", .clip = Clip(M::kNorm, 1.0), .nan_gradient = true});
  add({.label = "adam global_clipnorm NaN", .type = "adam", .clip = Clip(M::kGlobalNorm, 1.0), .nan_gradient = true});
  add({.label = "sgd clipvalue NaN", .type = "sgd", .clip = Clip(M::kValue, 0.5), .nan_gradient = true});
  return cases;
}

TEST(OptimizerMath, EveryOptimizerAndOptionBitIdenticalToApply) {
  for (const Case& c : AllCases()) RunCase(c, kVariableSizes, /*tiling_spans=*/true);
}

TEST(OptimizerMath, ClippingWithUntiledVariablesClipsTheBufferAsOne) {
  using M = nn::GradientClip::Mode;
  RunCase({.label = "sgd clipnorm untiled", .type = "sgd", .lr = 0.1, .clip = Clip(M::kNorm, 1.0)}, kVariableSizes,
          /*tiling_spans=*/false);
  RunCase({.label = "adam global_clipnorm untiled", .type = "adam", .clip = Clip(M::kGlobalNorm, 2.0)},
          kVariableSizes, /*tiling_spans=*/false);
}

TEST(OptimizerMath, OneSmallVariable) {
  using M = nn::GradientClip::Mode;
  RunCase({.label = "rmsprop clipnorm tiny", .type = "rmsprop", .lr = 0.01, .momentum = 0.9, .centered = true,
           .clip = Clip(M::kNorm, 0.01)},
          {5}, true);
  RunCase({.label = "nadam global tiny", .type = "nadam", .clip = Clip(M::kGlobalNorm, 0.01)}, {1}, true);
}

// ---------------------------------------------------------------- regularization

TEST(OptimizerMath, RegularizerGradientBitIdentical) {
  const size_t n = 5000;
  const auto w = WideRandom(n, 41, 3.0f);
  for (const auto& [l1, l2] : std::vector<std::pair<double, double>>{{0.01, 0}, {0, 0.05}, {0.02, 0.03}, {1e-7, 7.5}}) {
    for (float scale : {1.0f, 0.25f, 1.0f / 3.0f}) {
      auto cpu = WideRandom(n, 42, 0.1f);
      auto dev = cpu;
      nn::Regularizer(l1, l2).AddGradient(w.data(), n, scale, cpu.data());
      for (size_t i = 0; i < n; ++i) dev[i] = om::RegularizerGradient(dev[i], w[i], l1, l2, scale);
      ExpectSameBits(dev, cpu, "regularizer gradient l1 " + std::to_string(l1) + " l2 " + std::to_string(l2));
    }
  }
}

// The GPU's penalty of weights [0, n) with one regularizer: the pieces' sums, then the total.
double DevicePenalty(const std::vector<float>& w, const std::vector<std::pair<size_t, size_t>>& weights,
                     const std::vector<nn::Regularizer>& regs) {
  std::vector<om::Chunk> chunks;
  std::vector<om::RegSegment> segments;
  for (size_t k = 0; k < weights.size(); ++k) {
    om::RegSegment s{static_cast<int64_t>(chunks.size()), 0, regs[k].l1(), regs[k].l2()};
    om::AppendChunks(static_cast<int64_t>(weights[k].first), static_cast<int64_t>(weights[k].second),
                     static_cast<int32_t>(k), &chunks);
    s.end_chunk = static_cast<int64_t>(chunks.size());
    segments.push_back(s);
  }
  std::vector<double> abs_partial(chunks.size()), square_partial(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    om::PenaltySums(w.data() + chunks[c].offset, chunks[c].count, &abs_partial[c], &square_partial[c]);
  }
  return om::PenaltyTotal(segments.data(), static_cast<int64_t>(segments.size()), abs_partial.data(),
                          square_partial.data());
}

TEST(OptimizerMath, PenaltyIsTheCpusUpToOnePieceAndCloseAbove) {
  const auto w = WideRandom(100000, 43, 2.0f);
  for (size_t n : {size_t{0}, size_t{5}, size_t{16384}, size_t{16385}, size_t{100000}}) {
    for (const nn::Regularizer& r : {nn::Regularizer(0.01, 0), nn::Regularizer(0, 0.02), nn::Regularizer(0.3, 0.7)}) {
      const double want = r.Penalty(w.data(), n);
      const double got = DevicePenalty(w, {{0, n}}, {r});
      if (n <= static_cast<size_t>(om::kSumBlock)) {
        ExpectSameBits(got, want, "penalty of " + std::to_string(n));
      } else {
        EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << n;  // sequential sums' rounding
      }
    }
  }
}

// Through a model, as the CPU engine uses it: every regularized weight (a frozen layer's
// too) in the penalty, the trainable ones' gradients within a range.
TEST(OptimizerMath, ModelRegularizationAsTheCpuEngine) {
  auto built = nn::Model::FromJson(nlohmann::json::parse(R"({"input_shape": [6, 6, 1], "layers": [
      {"type": "conv2d", "filters": 2, "kernel_size": 3, "activation": "relu",
       "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.05}}},
      {"type": "flatten"},
      {"type": "dense", "units": 5, "activation": "relu", "kernel_regularizer": "l1_l2",
       "bias_regularizer": {"class_name": "L1L2", "config": {"l1": 0.02, "l2": 0.03}}},
      {"type": "dense", "units": 3, "bias_regularizer": "l1", "kernel_regularizer": "l2", "trainable": false}]})"),
                                   7);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  nn::Model& model = **built;
  const size_t trainable = model.num_trainable();
  ASSERT_LT(trainable, model.num_params());  // the frozen layer's weights follow
  std::vector<std::pair<size_t, size_t>> weights;
  std::vector<nn::Regularizer> regs;
  for (const nn::ParamInfo& p : model.param_infos()) {
    if (!p.regularizer.active()) continue;
    weights.push_back({p.offset, p.count});
    regs.push_back(p.regularizer);
  }
  const std::vector<float> w(model.params(), model.params() + model.num_params());
  ExpectSameBits(DevicePenalty(w, weights, regs), nn::RegularizationPenalty(model), "model penalty");

  const auto g0 = WideRandom(trainable, 44, 0.1f);
  const float scale = 0.5f;
  for (const auto& [begin, end] : std::vector<std::pair<size_t, size_t>>{{0, trainable}, {7, trainable - 3}}) {
    std::copy(g0.begin(), g0.end(), model.grads());
    nn::AddRegularizationGradients(&model, begin, end, scale);
    const std::vector<float> want(model.grads(), model.grads() + trainable);
    std::vector<float> got = g0;
    for (const nn::ParamInfo& p : model.param_infos()) {
      if (!p.trainable || !p.regularizer.active()) continue;
      for (size_t i = std::max(begin, p.offset); i < std::min(end, p.offset + p.count); ++i) {
        got[i] = om::RegularizerGradient(got[i], w[i], p.regularizer.l1(), p.regularizer.l2(), scale);
      }
    }
    ExpectSameBits(got, want, "model regularization gradients [" + std::to_string(begin) + ", " +
                                  std::to_string(end) + ")");
  }
}

}  // namespace
}  // namespace ringtrain::gpu
