// backends/cuda/activation_math.h on the host against the CPU: the element-wise
// activations (forward and backward) against backends/cpu/activations.h, softmax rows
// run in the GPU kernels' order (strided lanes, then the pairwise tree) against the CPU's
// one pass, and the ReLU / LeakyReLU layers' generic relu against the CPU backend's
// Activation kernel.
//
// Exact (the same bits, NaN where the CPU has NaN): every element-wise forward and
// backward and the generic relu; on the host the functions call the same C library
// expf / tanhf / erff / log1pf / expm1f as the CPU. (On the GPU those are CUDA's, within
// a few units in the last place: the op parity suite checks the kernels within 1e-4.)
// Within rounding: softmax, whose sums the GPU adds in another order (tolerances below);
// its maximum is exact.
#include "backends/cuda/activation_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/activations.h"
#include "nn/cpu_run.h"
#include "nn/layers/activation_layers.h"
#include "ops/op.h"

namespace ringtrain::gpu {
namespace {

using ops::Activation;

const std::vector<Activation>& ElementWise() {
  static const std::vector<Activation> all = {
      Activation::kLinear, Activation::kRelu,      Activation::kRelu6,    Activation::kSigmoid,
      Activation::kTanh,   Activation::kGelu,      Activation::kGeluTanh, Activation::kSwish,
      Activation::kElu,    Activation::kSelu,      Activation::kLeakyRelu, Activation::kSoftplus,
      Activation::kSoftsign, Activation::kMish,    Activation::kExponential,
  };
  return all;
}

// The same bits, or both NaN.
bool Same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(Same(got[i], want[i])) << what << " differs at " << i << " (x = " << x[i] << "): " << got[i]
                                       << " vs " << want[i];
  }
}

// Values over many binades, both signs, exact zeros, then the edges: +-0, the
// thresholds and caps of the relu variants, where expf overflows and underflows, huge
// values, infinities and NaN.
std::vector<float> Inputs(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-24, 7), sign(0, 1), zero(0, 31);
  std::vector<float> v(n);
  for (float& x : v) x = zero(gen) == 0 ? 0.0f : std::ldexp(mant(gen), expo(gen)) * (sign(gen) ? 1.0f : -1.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (float e : {0.0f, -0.0f, 0.5f, -0.5f, 6.0f, -6.0f, 5.9999995f, 6.0000005f, 1e-30f, -1e-30f, 1e-45f, 20.0f,
                  -20.0f, 88.0f, 88.8f, 89.0f, -88.0f, -103.0f, -104.0f, 100.0f, -100.0f, 1e4f, -1e4f, 1e30f,
                  -1e30f, 3.4e38f, -3.4e38f, inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
    v.push_back(e);
  }
  return v;
}

std::vector<float> Uniform(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// ---------------------------------------------------------------- element-wise

TEST(ActivationMath, ForwardSameBitsAsCpu) {
  const std::vector<float> x = Inputs(20000, 1);
  for (Activation act : ElementWise()) {
    std::vector<float> want(x.size()), got(x.size());
    backends::cpu::ActivationForward(act, x.data(), 1, x.size(), want.data());
    for (size_t i = 0; i < x.size(); ++i) got[i] = am::Forward(act, x[i]);
    ExpectSame(got, want, x, std::string("forward ") + ops::ActivationName(act));
  }
}

// The backward reads only what BackwardReads* says: the other argument is NaN here.
TEST(ActivationMath, BackwardSameBitsAsCpu) {
  const std::vector<float> x = Inputs(20000, 2);
  std::vector<float> dy = Inputs(x.size(), 3);
  std::shuffle(dy.begin(), dy.end(), std::mt19937(4));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Activation act : ElementWise()) {
    std::vector<float> y(x.size()), want(x.size()), got(x.size());
    backends::cpu::ActivationForward(act, x.data(), 1, x.size(), y.data());
    backends::cpu::ActivationBackwardInto(act, dy.data(), x.data(), y.data(), 1, x.size(), want.data());
    for (size_t i = 0; i < x.size(); ++i) {
      got[i] = am::Backward(act, dy[i], am::BackwardReadsX(act) ? x[i] : nan, am::BackwardReadsY(act) ? y[i] : nan);
    }
    ExpectSame(got, want, x, std::string("backward ") + ops::ActivationName(act));
  }
}

// ---------------------------------------------------------------- softmax rows
// The kernels' order, run by one thread: each lane's strided part, then the tree.
float RowReduce(std::vector<float>* partial, bool max) {
  return max ? am::TreeReduce(partial->data(), static_cast<int>(partial->size()), am::MaxOp())
             : am::TreeReduce(partial->data(), static_cast<int>(partial->size()), am::SumOp());
}

void SoftmaxAsGpu(const float* x, int64_t rows, int units, float* y, std::vector<float>* maxima) {
  const int lanes = am::SoftmaxLanes(units);
  std::vector<float> partial(static_cast<size_t>(lanes));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * units;
    float* yr = y + r * units;
    for (int l = 0; l < lanes; ++l) partial[l] = am::SoftmaxLaneMax(xr, units, l, lanes);
    const float m = RowReduce(&partial, true);
    if (maxima != nullptr) maxima->push_back(m);
    for (int l = 0; l < lanes; ++l) partial[l] = am::SoftmaxLaneExp(xr, m, units, l, lanes, yr);
    const float inv = am::SoftmaxInverse(RowReduce(&partial, false));
    for (int l = 0; l < lanes; ++l) am::SoftmaxLaneScale(inv, units, l, lanes, yr);
  }
}

void SoftmaxBackwardAsGpu(const float* dy, const float* y, int64_t rows, int units, float* dx) {
  const int lanes = am::SoftmaxLanes(units);
  std::vector<float> partial(static_cast<size_t>(lanes));
  for (int64_t r = 0; r < rows; ++r) {
    for (int l = 0; l < lanes; ++l) partial[l] = am::SoftmaxLaneDot(dy + r * units, y + r * units, units, l, lanes);
    const float dot = RowReduce(&partial, false);
    for (int l = 0; l < lanes; ++l) {
      am::SoftmaxLaneGrad(dy + r * units, y + r * units, dot, units, l, lanes, dx + r * units);
    }
  }
}

// Rows of every length class: shorter than, equal to and longer than a warp, the
// longest warp rows, and block rows. The tolerance: the sums differ by rounding (the
// CPU's one pass and the GPU's lanes and tree), by a relative few ulp per sqrt(units)
// terms in practice (measured: 1.2e-6 at 100 units, 8.3e-6 at 10,000).
double SoftmaxTolerance(int units) { return 1e-6 + 2e-7 * std::sqrt(static_cast<double>(units)); }

TEST(ActivationMath, SoftmaxRowsMatchCpu) {
  for (int units : {1, 2, 7, 10, 31, 32, 33, 100, 257, 1000, 1024, 1025, 3000, 10000}) {
    SCOPED_TRACE("units " + std::to_string(units));
    const int rows = units >= 1000 ? 3 : 17;
    for (float scale : {1.0f, 10.0f, 100.0f}) {
      std::vector<float> x = Uniform(static_cast<size_t>(rows) * units, 10 + units, -scale, scale);
      std::vector<float> want(x.size()), got(x.size()), maxima;
      backends::cpu::ActivationForward(Activation::kSoftmax, x.data(), rows, units, want.data());
      SoftmaxAsGpu(x.data(), rows, units, got.data(), &maxima);
      double worst = 0;
      for (int r = 0; r < rows; ++r) {
        const float* xr = x.data() + static_cast<size_t>(r) * units;
        EXPECT_EQ(maxima[r], *std::max_element(xr, xr + units)) << "row " << r << "'s maximum";
      }
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << i;
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / std::max<double>(want[i], 1e-30));
      }
      EXPECT_LE(worst, SoftmaxTolerance(units)) << "scale " << scale;
      if (units <= 2) {
        EXPECT_EQ(got, want) << "one or two terms: the sum is the CPU's";
      }

      // In place (y = x) gives the same bits: every element is read and written by its own lane.
      std::vector<float> in_place = x;
      SoftmaxAsGpu(in_place.data(), rows, units, in_place.data(), nullptr);
      EXPECT_EQ(std::memcmp(in_place.data(), got.data(), got.size() * sizeof(float)), 0) << "in place";

      // Backward from the CPU's output: dx = y * (dy - dot) cancels where dy is close to
      // dot, so each element's difference is measured against its terms' size,
      // y * (|dy| + sum |dy * y|).
      const std::vector<float> dy = Uniform(x.size(), 20 + units, -1.0f, 1.0f);
      std::vector<float> dwant(x.size()), dgot(x.size());
      backends::cpu::ActivationBackwardInto(Activation::kSoftmax, dy.data(), x.data(), want.data(), rows, units,
                                            dwant.data());
      SoftmaxBackwardAsGpu(dy.data(), want.data(), rows, units, dgot.data());
      for (int r = 0; r < rows; ++r) {
        const size_t row = static_cast<size_t>(r) * units;
        double terms = 0;
        for (int u = 0; u < units; ++u) terms += std::fabs(static_cast<double>(dy[row + u]) * want[row + u]);
        for (int u = 0; u < units; ++u) {
          const size_t i = row + u;
          const double size = static_cast<double>(want[i]) * (std::fabs(dy[i]) + terms);
          ASSERT_LE(std::fabs(static_cast<double>(dgot[i]) - dwant[i]), SoftmaxTolerance(units) * size + 1e-30)
              << "backward row " << r << " element " << u << ": " << dgot[i] << " vs " << dwant[i];
        }
      }
      // dx = dy in place gives the same bits.
      std::vector<float> dinplace = dy;
      SoftmaxBackwardAsGpu(dinplace.data(), want.data(), rows, units, dinplace.data());
      EXPECT_EQ(std::memcmp(dinplace.data(), dgot.data(), dgot.size() * sizeof(float)), 0) << "backward in place";
    }
  }
}

// Rows with NaN, infinities and values whose exponentials underflow: NaN exactly where
// the CPU has NaN, the rest as close as above.
TEST(ActivationMath, SoftmaxSpecialRowsMatchCpu) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int units : {5, 40, 2000}) {
    SCOPED_TRACE("units " + std::to_string(units));
    std::vector<std::vector<float>> rows;
    for (int special = 0; special < 9; ++special) {
      std::vector<float> row = Uniform(static_cast<size_t>(units), 30 + special, -3.0f, 3.0f);
      const size_t at = static_cast<size_t>(units) / 2 + 1;
      switch (special) {
        case 0: row[0] = nan; break;
        case 1: row[at] = nan; break;
        case 2: row[at] = inf; break;
        case 3: row[at] = -inf; break;
        case 4: std::fill(row.begin(), row.end(), -inf); break;
        case 5: row[at] = 1e4f; break;  // every other exponential underflows to 0
        case 6: std::fill(row.begin(), row.end(), 0.0f); row[at] = -0.0f; break;
        case 7: for (float& v : row) v *= 1e4f; break;
        case 8: std::fill(row.begin(), row.end(), 3.0e38f); row[0] = -3.0e38f; break;
      }
      rows.push_back(row);
    }
    std::vector<float> x;
    for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
    const int64_t n_rows = static_cast<int64_t>(rows.size());
    std::vector<float> want(x.size()), got(x.size());
    backends::cpu::ActivationForward(Activation::kSoftmax, x.data(), n_rows, units, want.data());
    SoftmaxAsGpu(x.data(), n_rows, units, got.data(), nullptr);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "element " << i << " of row " << i / units;
      if (std::isnan(want[i])) continue;
      EXPECT_LE(std::fabs(static_cast<double>(got[i]) - want[i]),
                SoftmaxTolerance(units) * std::max<double>(want[i], 1e-30))
          << "element " << i << " of row " << i / units;
    }
  }
}

// The tree's order: the strides halve from lanes / 2, each step pairing i with i + stride.
TEST(ActivationMath, TreeReduceOrder) {
  std::vector<float> v = {1e8f, 1.0f, -1e8f, 1.0f};  // (1e8 + -1e8) + (1 + 1) = 2; in element order 1
  EXPECT_EQ(am::TreeReduce(v.data(), 4, am::SumOp()), 2.0f);
  EXPECT_EQ(am::SoftmaxLanes(1), am::kSoftmaxWarpLanes);
  EXPECT_EQ(am::SoftmaxLanes(am::kSoftmaxWarpMaxUnits), am::kSoftmaxWarpLanes);
  EXPECT_EQ(am::SoftmaxLanes(am::kSoftmaxWarpMaxUnits + 1), am::kSoftmaxBlockLanes);
}

// ---------------------------------------------------------------- ReLU and LeakyReLU layers

struct LayerCase {
  const char* type;  // "re_lu", "leaky_re_lu"
  nlohmann::json args;
};

TEST(ActivationMath, GenericReluSameBitsAsLayer) {
  const std::vector<LayerCase> cases = {
      {"re_lu", nlohmann::json::object()},
      {"re_lu", {{"max_value", 6}}},
      {"re_lu", {{"max_value", 0}}},
      {"re_lu", {{"max_value", nullptr}}},
      {"re_lu", {{"negative_slope", 0.1}}},  // the leaky backward path
      {"re_lu", {{"threshold", 0.5}}},
      {"re_lu", {{"negative_slope", 0.1}, {"threshold", 0.5}}},
      {"re_lu", {{"max_value", 6}, {"negative_slope", 0.1}}},
      {"re_lu", {{"max_value", 6}, {"negative_slope", 0.25}, {"threshold", 0.25}}},
      {"re_lu", {{"max_value", 0.5}, {"negative_slope", 0.5}, {"threshold", 1}}},  // threshold above the cap
      {"re_lu", {{"max_value", 0.5}, {"threshold", 0.5}}},
      {"leaky_re_lu", nlohmann::json::object()},  // negative_slope 0.3
      {"leaky_re_lu", {{"negative_slope", 0.05}}},
      {"leaky_re_lu", {{"alpha", 0.1}}},
      {"leaky_re_lu", {{"negative_slope", 0}}},  // no slope: the general backward path
      {"leaky_re_lu", {{"negative_slope", 3}}},
  };
  const std::vector<float> x = Inputs(5000, 5);
  std::vector<float> dy = Inputs(x.size(), 6);
  std::shuffle(dy.begin(), dy.end(), std::mt19937(7));
  const nn::Shape shape = {static_cast<int>(x.size())};
  for (const LayerCase& c : cases) {
    const std::string what = std::string(c.type) + " " + c.args.dump();
    nlohmann::json j = c.args;
    j["type"] = c.type;
    auto made = std::string(c.type) == "re_lu" ? nn::ActivationLayer::CreateReLU(j, "relu", shape, what)
                                               : nn::ActivationLayer::CreateLeakyReLU(j, "relu", shape, what);
    ASSERT_TRUE(made.ok()) << what << ": " << made.status().ToString();
    nn::Layer& layer = **made;
    const ops::Op op = layer.op();
    ASSERT_EQ(op.kind, ops::OpKind::kActivation);
    ASSERT_TRUE(op.relu.generic) << what;
    nn::testing::CpuRun run(layer);
    const float* y = run.Forward(x.data(), 1, true);
    const std::vector<float> want_y(y, y + x.size());
    const float* dx = run.Backward(dy.data(), true);
    const std::vector<float> want_dx(dx, dx + x.size());
    std::vector<float> got_y(x.size()), got_dx(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      got_y[i] = am::GenericReluForward(op.relu, x[i]);
      got_dx[i] = am::GenericReluBackward(op.relu, dy[i], x[i]);
    }
    ExpectSame(got_y, want_y, x, what + " forward");
    ExpectSame(got_dx, want_dx, x, what + " backward");
  }
}

}  // namespace
}  // namespace ringtrain::gpu
