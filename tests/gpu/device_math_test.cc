// backends/cuda/device_math.h on the host against the CPU kernels. The GPU kernels
// (src/backends/cuda/gpu_kernels.cu) are thin loops over these functions, and CI has no GPU, so
// this is where their arithmetic is proven: each test runs the functions in the same
// loops (index decomposition, chunking, summation order) as the kernels do.
#include "backends/cuda/device_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/activations.h"
#include "kernels/impl.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "nn/losses/loss.h"

namespace ringtrain::gpu {
namespace {

using kernels::MakeTestWindow;
using kernels::Window;

template <typename T>
void ExpectSameBits(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0) << what << " differs at " << i << ": " << got[i]
                                                             << " vs " << want[i];
  }
}

// Values over many binades, both signs, some exact zeros: rounding differences show.
std::vector<float> WideRandom(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-20, 6), sign(0, 1), zero(0, 63);
  std::vector<float> v(n);
  for (float& x : v) x = zero(gen) == 0 ? 0.0f : std::ldexp(mant(gen), expo(gen)) * (sign(gen) ? 1.0f : -1.0f);
  return v;
}

// ---------------------------------------------------------------- optimizer updates
// Several steps from the same state on both sides, so slot values feed back in.
constexpr size_t kParams = 4099;  // not a multiple of any vector width or block
constexpr int kSteps = 4;

TEST(DeviceMathOptimizer, SgdBitIdentical) {
  auto cpu = WideRandom(kParams, 1);
  auto dev = cpu;
  for (int s = 0; s < kSteps; ++s) {
    const auto g = WideRandom(kParams, 10 + s);
    const float lr = 0.01f * static_cast<float>(s + 1);
    kernels::SgdUpdate(cpu.data(), g.data(), kParams, lr);
    for (size_t i = 0; i < kParams; ++i) dev[i] = dm::SgdParamStep(dev[i], g[i], lr);
  }
  ExpectSameBits(dev, cpu, "sgd params");
}

TEST(DeviceMathOptimizer, MomentumBitIdenticalBothNesterov) {
  for (bool nesterov : {false, true}) {
    auto cpu_p = WideRandom(kParams, 2), cpu_v = WideRandom(kParams, 3);
    auto dev_p = cpu_p, dev_v = cpu_v;
    for (int s = 0; s < kSteps; ++s) {
      const auto g = WideRandom(kParams, 20 + s);
      const float lr = 0.05f, momentum = 0.9f;
      kernels::SgdMomentumUpdate(cpu_p.data(), cpu_v.data(), g.data(), kParams, lr, momentum, nesterov);
      for (size_t i = 0; i < kParams; ++i) dm::MomentumStep(&dev_p[i], &dev_v[i], g[i], lr, momentum, nesterov);
    }
    const std::string what = nesterov ? "nesterov" : "momentum";
    ExpectSameBits(dev_p, cpu_p, what + " params");
    ExpectSameBits(dev_v, cpu_v, what + " velocity");
  }
}

TEST(DeviceMathOptimizer, AdamBitIdentical) {
  auto cpu_p = WideRandom(kParams, 4), cpu_m = WideRandom(kParams, 5);
  auto cpu_v = WideRandom(kParams, 6);
  for (float& x : cpu_v) x = std::fabs(x);  // a second moment is never negative
  auto dev_p = cpu_p, dev_m = cpu_m, dev_v = cpu_v;
  for (int s = 0; s < kSteps; ++s) {
    const auto g = WideRandom(kParams, 30 + s);
    // Keras' bias-corrected step size for step s + 1.
    const double t = s + 1;
    const float alpha = static_cast<float>(0.001 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t)));
    kernels::AdamUpdate(cpu_p.data(), cpu_m.data(), cpu_v.data(), g.data(), kParams, alpha, 0.1f, 0.001f, 1e-7f);
    for (size_t i = 0; i < kParams; ++i) {
      dm::AdamStep(&dev_p[i], &dev_m[i], &dev_v[i], g[i], alpha, 0.1f, 0.001f, 1e-7f);
    }
  }
  ExpectSameBits(dev_p, cpu_p, "adam params");
  ExpectSameBits(dev_m, cpu_m, "adam m");
  ExpectSameBits(dev_v, cpu_v, "adam v");
}

// ---------------------------------------------------------------- softmax cross-entropy
// The GPU's three kernels on the host: per-row statistics, then each gradient element
// from its row's (max, log_sum) alone, then one ordered sum.
nn::LossStats HostSoftmaxXent(const std::vector<float>& logits, const std::vector<int32_t>& labels, int classes,
                              float grad_scale, std::vector<float>* grad) {
  const int batch = static_cast<int>(labels.size());
  std::vector<double> max(batch), log_sum(batch), loss(batch), correct(batch);
  for (int i = 0; i < batch; ++i) {
    const float* x = logits.data() + static_cast<size_t>(i) * classes;
    const dm::SoftmaxRow r = dm::SoftmaxRowStats(x, classes);
    max[i] = r.max;
    log_sum[i] = r.log_sum;
    loss[i] = dm::SoftmaxXentLoss(x, r, labels[i], classes);
    correct[i] = dm::SoftmaxXentCorrect(r, labels[i]) ? 1.0 : 0.0;
  }
  grad->assign(logits.size(), 0.0f);
  for (size_t i = 0; i < logits.size(); ++i) {
    const size_t example = i / classes;
    dm::SoftmaxRow r;  // only max and log_sum, as the gradient kernel reads them
    r.max = max[example];
    r.log_sum = log_sum[example];
    (*grad)[i] = dm::SoftmaxXentGrad(logits[i], static_cast<int>(i % classes), labels[example], r, grad_scale);
  }
  double loss_sum = 0, correct_sum = 0;
  for (int i = 0; i < batch; ++i) {
    loss_sum += loss[i];
    correct_sum += correct[i];
  }
  nn::LossStats stats;
  stats.loss_sum = loss_sum;
  stats.correct = static_cast<int64_t>(correct_sum);
  return stats;
}

void CheckSoftmaxXent(const std::vector<float>& logits, const std::vector<int32_t>& labels, int classes,
                      const std::string& what) {
  const int batch = static_cast<int>(labels.size());
  const float grad_scale = 1.0f / 96.0f;
  std::vector<float> cpu_grad(logits.size()), dev_grad;
  const nn::LossStats cpu =
      nn::SparseSoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, grad_scale, cpu_grad.data());
  const nn::LossStats dev = HostSoftmaxXent(logits, labels, classes, grad_scale, &dev_grad);
  if (std::isnan(cpu.loss_sum)) {
    EXPECT_TRUE(std::isnan(dev.loss_sum)) << what;
  } else {
    EXPECT_EQ(std::memcmp(&dev.loss_sum, &cpu.loss_sum, sizeof(double)), 0)
        << what << ": " << dev.loss_sum << " vs " << cpu.loss_sum;
  }
  EXPECT_EQ(dev.correct, cpu.correct) << what;
  ExpectSameBits(dev_grad, cpu_grad, what + " gradients");
}

TEST(DeviceMathSoftmaxXent, MatchesCpuBitsOverScalesAndSizes) {
  std::mt19937 gen(7);
  for (int classes : {1, 2, 10, 257, 1000}) {
    for (float scale : {0.1f, 3.0f, 60.0f}) {  // 60: exp(x) alone would overflow in float
      const int batch = 37;
      auto logits = kernels::Random(static_cast<size_t>(batch) * classes, 100 + classes, -scale, scale);
      std::vector<int32_t> labels(batch);
      std::uniform_int_distribution<int32_t> label(0, classes - 1);
      for (int32_t& l : labels) l = label(gen);
      CheckSoftmaxXent(logits, labels, classes,
                       "classes " + std::to_string(classes) + " scale " + std::to_string(scale));
    }
  }
}

TEST(DeviceMathSoftmaxXent, TiesGoToTheFirstArgmax) {
  // Integer logits from a small range: most rows have a tied maximum, and labels hit
  // the first and the later tied classes, so 'correct' separates the tie rules.
  const int batch = 64, classes = 5;
  auto logits = kernels::Random(static_cast<size_t>(batch) * classes, 8, 0.0f, 3.0f);
  for (float& v : logits) v = std::floor(v);
  std::vector<int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = i % classes;
  CheckSoftmaxXent(logits, labels, classes, "ties");
  const nn::LossStats cpu = nn::SparseSoftmaxCrossEntropy(logits.data(), labels.data(), batch, classes, 1.0f,
                                                           nullptr);
  EXPECT_GT(cpu.correct, 0);  // the case is exercised
}

TEST(DeviceMathSoftmaxXent, LabelOutsideClassesMakesTheLossNaN) {
  const int batch = 6, classes = 4;
  auto logits = kernels::Random(static_cast<size_t>(batch) * classes, 9);
  for (int32_t bad : {-1, classes, 1000}) {
    std::vector<int32_t> labels = {0, 1, bad, 3, 2, 1};
    CheckSoftmaxXent(logits, labels, classes, "bad label " + std::to_string(bad));
    std::vector<float> grad;
    EXPECT_TRUE(std::isnan(HostSoftmaxXent(logits, labels, classes, 1.0f, &grad).loss_sum));
  }
}

// ---------------------------------------------------------------- max pooling
// The GPU's forward (one thread per output, row-major NHWC index decomposition) and
// backward (one thread per input cell gathering its outputs) as host loops.
void HostMaxPool(const Window& g, const std::vector<float>& x, int batch, std::vector<float>* y,
                 std::vector<int32_t>* argmax, std::vector<float>* dx, const std::vector<float>& dy) {
  const int64_t per_example = static_cast<int64_t>(g.out_h) * g.out_w * g.c;
  const int64_t in_size = static_cast<int64_t>(g.in_size());
  y->assign(static_cast<size_t>(batch * per_example), 0.0f);
  argmax->assign(y->size(), 0);
  for (int64_t i = 0; i < batch * per_example; ++i) {
    const int64_t example = i / per_example;
    int64_t rest = i % per_example;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int ow = static_cast<int>(rest % g.out_w), oh = static_cast<int>(rest / g.out_w);
    float value;
    (*argmax)[i] = dm::MaxPoolScan(g, x.data() + example * in_size, oh, ow, c, &value);
    (*y)[i] = value;
  }
  dx->assign(x.size(), 0.0f);
  for (int64_t i = 0; i < batch * in_size; ++i) {
    const int64_t example = i / in_size;
    int64_t rest = i % in_size;
    const int c = static_cast<int>(rest % g.c);
    rest /= g.c;
    const int iw = static_cast<int>(rest % g.w), ih = static_cast<int>(rest / g.w);
    const int64_t out0 = example * per_example;
    (*dx)[i] = dm::MaxPoolGather(g, argmax->data() + out0, dy.data() + out0, ih, iw, c);
  }
}

struct PoolCase {
  int h, w, c, kh, kw, sh, sw;
  bool same;
};

std::string Name(const PoolCase& p) {
  return std::to_string(p.h) + "x" + std::to_string(p.w) + "x" + std::to_string(p.c) + " k" + std::to_string(p.kh) +
         "x" + std::to_string(p.kw) + " s" + std::to_string(p.sh) + "x" + std::to_string(p.sw) +
         (p.same ? " same" : " valid");
}

const PoolCase kPoolCases[] = {
    {8, 8, 3, 2, 2, 2, 2, false},   {7, 9, 5, 2, 2, 2, 2, true},    {9, 7, 4, 3, 3, 1, 1, true},
    {9, 7, 4, 3, 3, 1, 1, false},   {10, 11, 2, 3, 3, 2, 2, true},  {10, 11, 2, 3, 3, 2, 2, false},
    {12, 10, 17, 4, 3, 2, 1, true}, {12, 10, 17, 4, 3, 3, 2, false}, {6, 6, 3, 2, 2, 3, 3, false},
    {6, 7, 3, 1, 1, 2, 2, true},    {5, 5, 1, 5, 5, 1, 1, true},    {26, 26, 32, 2, 2, 2, 2, false},
    {1, 9, 2, 1, 3, 1, 2, true},
};

// Runs the CPU kernels under every implementation this machine has and compares bits.
void CheckPool(const Window& g, int batch, const std::vector<float>& x, const std::string& what) {
  const size_t outputs = static_cast<size_t>(batch) * g.out_h * g.out_w * g.c;
  const auto dy = kernels::Random(outputs, 77);
  std::vector<float> dev_y, dev_dx;
  std::vector<int32_t> argmax;
  HostMaxPool(g, x, batch, &dev_y, &argmax, &dev_dx, dy);
  for (bool portable : {true, false}) {
    kernels::SetForcePortable(portable);
    if (!portable && !kernels::UseAvx512()) continue;
    const std::string impl = what + (portable ? " [portable]" : " [avx512]");
    std::vector<float> cpu_y(outputs, 99.0f), cpu_dx(x.size(), 99.0f);
    kernels::MaxPoolForward(g, x.data(), batch, cpu_y.data());
    kernels::MaxPoolBackward(g, x.data(), cpu_y.data(), dy.data(), batch, cpu_dx.data());
    ExpectSameBits(dev_y, cpu_y, impl + " forward");
    ExpectSameBits(dev_dx, cpu_dx, impl + " backward");
  }
  kernels::SetForcePortable(false);
}


TEST(DeviceMathMaxPool, MatchesCpuWithTiesAndOverlappingWindows) {
  const int batch = 3;
  for (const PoolCase& p : kPoolCases) {
    const Window g = MakeTestWindow(p.h, p.w, p.c, p.kh, p.kw, p.sh, p.sw, p.same);
    // Few distinct values: most windows hold a tied maximum, and overlapping windows
    // (stride < pool) send several gradients to one cell.
    auto ties = kernels::Random(static_cast<size_t>(batch) * g.in_size(), 40 + p.h, -2.0f, 2.0f);
    for (float& v : ties) v = std::floor(v);
    CheckPool(g, batch, ties, Name(p) + " ties");
    CheckPool(g, batch, kernels::Random(ties.size(), 60 + p.w), Name(p) + " distinct");
  }
}

TEST(DeviceMathMaxPool, SignedZerosAndNaN) {
  // -0 == +0, so the first zero wins; a NaN first cell makes the output NaN and the
  // CPU then sends that gradient nowhere, a later NaN never wins.
  const Window g = MakeTestWindow(4, 4, 2, 2, 2, 1, 1, false);
  std::vector<float> x = kernels::Random(g.in_size(), 5);
  x[0] = -0.0f, x[2] = 0.0f, x[8] = 0.0f, x[10] = -0.0f;
  x[1] = std::numeric_limits<float>::quiet_NaN();   // first cell of output (0, 0), channel 1
  x[13] = std::numeric_limits<float>::quiet_NaN();  // cell (1, 2) channel 1: later in some windows
  CheckPool(g, 1, x, "zeros and NaN");
  float value;
  EXPECT_EQ(dm::MaxPoolScan(g, x.data(), 0, 0, 1, &value), -1);
  EXPECT_TRUE(std::isnan(value));
}

// PoolCover must list exactly the outputs whose (clipped) windows hold the input cell.
TEST(DeviceMathMaxPool, CoverIsTheInverseOfTheWindows) {
  for (int k = 1; k <= 5; ++k) {
    for (int stride = 1; stride <= 4; ++stride) {
      for (int extent = 1; extent <= 12; ++extent) {
        for (bool same : {false, true}) {
          if (!same && extent < k) continue;
          const Window g = MakeTestWindow(extent, 1, 1, k, 1, stride, 1, same);
          for (int i = 0; i < extent; ++i) {
            int lo, hi;
            dm::PoolCover(i, g.stride_h, g.pad_top, g.kh, g.out_h, &lo, &hi);
            for (int o = 0; o < g.out_h; ++o) {
              int s0, s1;
              dm::PoolSpan(o, g.stride_h, g.pad_top, g.kh, g.h, &s0, &s1);
              ASSERT_EQ(o >= lo && o < hi, i >= s0 && i < s1)
                  << "k " << k << " stride " << stride << " extent " << extent << " same " << same << " i " << i
                  << " o " << o;
            }
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------- activation and bias
// The GPU's bias-gradient kernel on the host: per column, each lane's chunk in row
// order, then the lanes in order.
void HostActivationBiasBackward(const std::vector<float>& dy, const std::vector<float>& y, int64_t rows, int cols,
                                bool relu, float* dpre, float* db) {
  const int64_t lanes = dm::BiasGradLanes(rows);
  for (int col = 0; col < cols; ++col) {
    float sum = 0.0f;
    for (int64_t lane = 0; lane < lanes; ++lane) {
      int64_t begin, end;
      dm::BiasGradChunk(rows, lanes, lane, &begin, &end);
      const float part = dm::ActivationBiasChunk(dy.data(), y.data(), begin, end, cols, col, relu, dpre);
      sum = lane == 0 ? part : sum + part;
    }
    db[col] = sum;
  }
}

std::vector<float> ReluOutputs(size_t n, uint32_t seed) {
  auto y = kernels::Random(n, seed);
  for (size_t i = 0; i < n; i += 7) y[i] = 0.0f;  // exactly zero: masked, like negatives
  for (float& v : y) v = v > 0.0f ? v : 0.0f;
  return y;
}

TEST(DeviceMathActivation, OneLaneMatchesCpuBits) {
  for (bool relu : {false, true}) {
    for (int64_t rows : {int64_t{1}, int64_t{64}, int64_t{1000}, dm::kBiasGradLaneRows}) {
      for (int cols : {1, 10, 33}) {
        ASSERT_EQ(dm::BiasGradLanes(rows), 1);
        const size_t n = static_cast<size_t>(rows) * cols;
        const auto dy = WideRandom(n, 50), y = ReluOutputs(n, 51);
        std::vector<float> cpu_scratch(n), cpu_db(cols), dev_dpre(n, 99.0f), dev_db(cols, 99.0f);
        const float* cpu_dpre = backends::cpu::ActivationBiasBackward(
            dy.data(), y.data(), rows, cols, relu ? ops::Activation::kRelu : ops::Activation::kLinear,
            cpu_scratch.data(), cpu_db.data());
        HostActivationBiasBackward(dy, y, rows, cols, relu, dev_dpre.data(), dev_db.data());
        const std::string what = (relu ? "relu " : "linear ") + std::to_string(rows) + "x" + std::to_string(cols);
        ExpectSameBits(dev_dpre, std::vector<float>(cpu_dpre, cpu_dpre + n), what + " dpre");
        ExpectSameBits(dev_db, cpu_db, what + " db");
        // The mask alone (the kernel without a bias gradient).
        std::vector<float> mask(n);
        for (size_t i = 0; i < n; ++i) mask[i] = dm::ActivationGrad(dy[i], y[i], relu);
        ExpectSameBits(mask, dev_dpre, what + " mask");
      }
    }
  }
}

TEST(DeviceMathActivation, ManyLanesAgreeWithCpuAndWorkInPlace) {
  const int64_t rows = 3 * dm::kBiasGradLaneRows + 5;  // conv-sized; the last chunk is short
  const int64_t lanes = dm::BiasGradLanes(rows);
  ASSERT_EQ(lanes, (rows + dm::kBiasGradChunkRows - 1) / dm::kBiasGradChunkRows);
  int64_t covered = 0;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    int64_t begin, end;
    dm::BiasGradChunk(rows, lanes, lane, &begin, &end);
    ASSERT_EQ(begin, covered);
    ASSERT_LE(end - begin, dm::kBiasGradChunkRows);
    covered = end;
  }
  ASSERT_EQ(covered, rows);
  const int cols = 35;
  const size_t n = static_cast<size_t>(rows) * cols;
  for (bool relu : {false, true}) {
    const auto dy = kernels::Random(n, 52), y = ReluOutputs(n, 53);
    std::vector<float> cpu_scratch(n), cpu_db(cols), dev_db(cols);
    const float* cpu_dpre = backends::cpu::ActivationBiasBackward(
        dy.data(), y.data(), rows, cols, relu ? ops::Activation::kRelu : ops::Activation::kLinear,
        cpu_scratch.data(), cpu_db.data());
    auto inplace = dy;  // dpre == dy, as the engine may pass
    HostActivationBiasBackward(inplace, y, rows, cols, relu, inplace.data(), dev_db.data());
    ExpectSameBits(inplace, std::vector<float>(cpu_dpre, cpu_dpre + n), "in-place dpre");
    std::vector<double> want(cols, 0.0);
    double scale = 1.0;
    for (size_t i = 0; i < n; ++i) want[i % cols] += cpu_dpre[i];
    for (double w : want) scale = std::max(scale, std::fabs(w));
    for (int c = 0; c < cols; ++c) {
      EXPECT_NEAR(dev_db[c], want[c], 1e-4 * scale) << "column " << c;
      EXPECT_NEAR(dev_db[c], cpu_db[c], 1e-4 * scale) << "column " << c;
    }
    // Same inputs, same bits.
    std::vector<float> again(n), again_db(cols);
    HostActivationBiasBackward(dy, y, rows, cols, relu, again.data(), again_db.data());
    ExpectSameBits(again_db, dev_db, "repeat db");
  }
}

TEST(DeviceMathActivation, BiasActivationMatchesCpuEpilogue) {
  // DenseForward with an identity input makes the product exactly w, so the epilogue
  // (bias add, relu) is all that rounds: it must be the CPU's bits.
  const int batch = 24, units = 37;
  std::vector<float> eye(static_cast<size_t>(batch) * batch, 0.0f);
  for (int i = 0; i < batch; ++i) eye[static_cast<size_t>(i) * batch + i] = 1.0f;
  auto w = WideRandom(static_cast<size_t>(batch) * units, 54);
  const auto bias = WideRandom(units, 55);
  for (bool portable : {true, false}) {
    kernels::SetForcePortable(portable);
    if (!portable && !kernels::UseAvx512()) continue;
    for (bool relu : {false, true}) {
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> cpu(w.size()), dev(w.size());
        kernels::DenseForward(eye.data(), batch, batch, w.data(), units, b, relu, cpu.data());
        for (size_t i = 0; i < w.size(); ++i) dev[i] = dm::BiasActivation(w[i], b, static_cast<int>(i % units), relu);
        ExpectSameBits(dev, cpu, std::string(portable ? "portable" : "avx512") + (relu ? " relu" : " linear") +
                                     (b ? " bias" : " no bias"));
      }
    }
  }
  kernels::SetForcePortable(false);
  EXPECT_EQ(std::signbit(dm::Relu(-0.0f)), false);
  EXPECT_EQ(dm::Relu(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

// ---------------------------------------------------------------- conv kernel layouts
TEST(DeviceMathLayout, OhwiIsHwioTransposed) {
  const int kh = 3, kw = 2, c = 5, f = 7;
  const int64_t n = static_cast<int64_t>(kh) * kw * c * f;
  std::vector<int> seen(n, 0);
  for (int jf = 0; jf < f; ++jf) {
    for (int ih = 0; ih < kh; ++ih) {
      for (int iw = 0; iw < kw; ++iw) {
        for (int ic = 0; ic < c; ++ic) {
          const int64_t ohwi = ((static_cast<int64_t>(jf) * kh + ih) * kw + iw) * c + ic;
          const int64_t hwio = ((static_cast<int64_t>(ih) * kw + iw) * c + ic) * f + jf;
          ASSERT_EQ(dm::OhwiToHwioIndex(ohwi, kh, kw, c, f), hwio);
          ++seen[hwio];
        }
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << i;  // a permutation
}

}  // namespace
}  // namespace ringtrain::gpu
