// backends/cuda/norm_math.h on the host against the CPU backend's kernels of the
// BatchNorm and LayerNorm ops (and the per-channel kernels of kernels/norm.h they call). The GPU
// kernels (src/backends/cuda/norm_kernels.cu) are thin loops over these functions, and
// CI has no GPU, so this is where their arithmetic is proven: each test runs the
// functions in the same loops (chunks, lanes, per-row threads and tree order) and the
// same control flow (the kernels' classes in batch_norm_kernel.cc / layer_norm_kernel.cc)
// as the GPU does.
//
// BatchNorm up to nm::kOneLaneRows rows sums in the CPU's order: forward, statistics,
// gradients and the moving statistics give the CPU's bits. Above that, and for
// LayerNorm's per-row sums (a tree), the order differs and the results agree to rounding.
#include "backends/cuda/norm_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/layers/batch_norm.h"
#include "nn/layers/layer_norm.h"
#include "nn/norm_test_util.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;
using nn::testing::Bind;
using nn::testing::BoundLayer;
using nn::testing::RandomVector;
using nn::testing::Shifted;

void ExpectSameBits(const float* got, const float* want, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << what << " differs at " << i << ": " << got[i] << " vs " << want[i];
  }
}
void ExpectSameBits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ExpectSameBits(got.data(), want.data(), got.size(), what);
}

// max |got - want| / max |want| <= tol.
void ExpectClose(const float* got, const float* want, size_t n, double tol, const std::string& what) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << what << " at " << i;
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  EXPECT_LE(diff / std::max(scale, 1e-12), tol) << what;
}
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ExpectClose(got.data(), want.data(), got.size(), tol, what);
}

// ---------------------------------------------------------------- the kernels' loops on the host

// BnChannelSums / BnGradSums' two passes: chunk sums per (lane, column), then lanes in order.
template <typename Chunk>
void TwoPassColumnSums(int64_t rows, int64_t cols, Chunk chunk, double* first, double* second) {
  const int64_t lanes = nm::SumLanes(rows);
  std::vector<double> p1(static_cast<size_t>(lanes * cols)), p2(p1.size());
  for (int64_t lane = 0; lane < lanes; ++lane) {
    int64_t begin, end;
    nm::LaneRows(rows, lanes, lane, &begin, &end);
    for (int64_t col = 0; col < cols; ++col) chunk(begin, end, col, &p1[lane * cols + col], &p2[lane * cols + col]);
  }
  for (int64_t col = 0; col < cols; ++col) {
    first[col] = nm::SumOverLanes(p1.data(), lanes, cols, col);
    second[col] = nm::SumOverLanes(p2.data(), lanes, cols, col);
  }
}

// GpuBatchNorm (batch_norm_kernel.cc) with the device passes run on the host.
struct EmuBatchNorm {
  int c = 0;
  bool training_mode = true, synchronized = false, relu = false, masked = false;
  float eps = 0.001f, momentum = 0.99f;
  const float* gamma = nullptr;  // null: scale false
  const float* beta = nullptr;   // null: center false
  float *moving_mean = nullptr, *moving_var = nullptr;
  float *dgamma = nullptr, *dbeta = nullptr, *stats = nullptr;
  const backends::StepContext* step = nullptr;

  std::vector<double> sums;
  std::vector<float> mean, invstd, a, b, mean_g, coef_b, y, dx, red;
  const float* x = nullptr;
  int64_t rows = 0;
  double count = 0;
  bool batch_stats = false;

  bool Sync() const { return synchronized && step != nullptr && step->all_reduce_sum && step->num_replicas > 1; }

  const float* Forward(const float* in, int64_t in_rows, bool training) {
    const size_t n = static_cast<size_t>(c);
    sums.resize(2 * n);
    for (auto* v : {&mean, &invstd, &a, &b, &mean_g, &coef_b}) v->resize(n);
    red.resize(nm::ForwardReduceFloats(c));
    x = in;
    rows = in_rows;
    y.resize(static_cast<size_t>(rows) * n);
    batch_stats = training && training_mode;
    if (batch_stats) {
      TwoPassColumnSums(
          rows, c,
          [&](int64_t begin, int64_t end, int64_t k, double* s, double* q) {
            nm::ChannelSumsChunk(x, begin, end, c, static_cast<int>(k), s, q);
          },
          sums.data(), sums.data() + n);
      count = static_cast<double>(rows);
      if (Sync()) {
        nm::PackForwardReduce(static_cast<size_t>(rows), sums.data(), c, red.data());
        if (!step->all_reduce_sum(red.data(), nm::ForwardReduceFloats(c))) return y.data();
        count = nm::UnpackForwardReduce(red.data(), c, sums.data());
      }
      for (size_t k = 0; k < n; ++k) {
        const nm::BnCoef r = nm::BatchCoef(sums[k], sums[n + k], count, eps, gamma, beta, static_cast<int>(k));
        mean[k] = r.mean;
        invstd[k] = r.invstd;
        a[k] = r.a;
        b[k] = r.b;
        if (stats != nullptr) {
          stats[k] = r.mean;
          stats[n + k] = r.var;
        }
      }
    } else {
      for (size_t k = 0; k < n; ++k) {
        const nm::BnCoef r = nm::MovingCoef(moving_mean[k], moving_var[k], eps, gamma, beta, static_cast<int>(k));
        mean[k] = r.mean;
        invstd[k] = r.invstd;
        a[k] = r.a;
        b[k] = r.b;
      }
    }
    for (size_t i = 0; i < y.size(); ++i) y[i] = nm::Affine(x[i], a[i % n], b[i % n], relu);
    return y.data();
  }

  const float* ScaleGrad(const float* dy, const float* relu_y) {
    const size_t n = static_cast<size_t>(c);
    for (size_t i = 0; i < dx.size(); ++i) dx[i] = nm::ScaleGrad(nm::MaskedGrad(dy, relu_y, static_cast<int64_t>(i)), a[i % n]);
    return dx.data();
  }

  const float* Backward(const float* dy, bool need_din) {
    const size_t n = static_cast<size_t>(c);
    dx.resize(static_cast<size_t>(rows) * n);
    const float* relu_y = relu && !masked ? y.data() : nullptr;
    masked = false;
    if (dgamma == nullptr && dbeta == nullptr && !batch_stats) return need_din ? ScaleGrad(dy, relu_y) : nullptr;
    std::vector<double> sg(n), sgx(n);
    TwoPassColumnSums(
        rows, c,
        [&](int64_t begin, int64_t end, int64_t k, double* g, double* gx) {
          nm::ChannelGradSumsChunk(dy, relu_y, x, begin, end, c, static_cast<int>(k), g, gx);
        },
        sg.data(), sgx.data());
    for (size_t k = 0; k < n; ++k) {
      sums[k] = sg[k];
      sums[n + k] = nm::GradXhatSum(sg[k], sgx[k], mean[k], invstd[k]);
      if (dbeta != nullptr) dbeta[k] = static_cast<float>(sums[k]);
      if (dgamma != nullptr) dgamma[k] = static_cast<float>(sums[n + k]);
    }
    if (!need_din) return nullptr;
    if (!batch_stats) return ScaleGrad(dy, relu_y);
    if (Sync()) {
      nm::PackBackwardReduce(sums.data(), c, red.data());
      if (!step->all_reduce_sum(red.data(), nm::BackwardReduceFloats(c))) return dx.data();
      nm::UnpackBackwardReduce(red.data(), c, sums.data());
    }
    for (size_t k = 0; k < n; ++k) nm::InputGradCoef(sums[k], sums[n + k], count, a[k], invstd[k], &mean_g[k], &coef_b[k]);
    for (size_t i = 0; i < dx.size(); ++i) {
      const size_t k = i % n;
      dx[i] = nm::InputGrad(nm::MaskedGrad(dy, relu_y, static_cast<int64_t>(i)), x[i], a[k], mean_g[k], coef_b[k],
                            mean[k]);
    }
    return dx.data();
  }

  void ApplyReducedStats(const float* s, int num_replicas) {
    if (num_replicas <= 0) return;
    const float keep = momentum, take = 1.0f - momentum;
    for (int k = 0; k < c; ++k) {
      moving_mean[k] = nm::MovingUpdate(moving_mean[k], s[k], static_cast<float>(num_replicas), keep, take);
      moving_var[k] = nm::MovingUpdate(moving_var[k], s[c + k], static_cast<float>(num_replicas), keep, take);
    }
  }
};

// The CPU layer and its emulated GPU kernel on copies of the same weights.
struct BnPair {
  std::unique_ptr<BoundLayer> cpu;
  std::vector<float> gamma, beta, moving_mean, moving_var, dgamma, dbeta, stats;
  EmuBatchNorm gpu;
};

std::unique_ptr<BnPair> MakeBn(const json& j, const nn::Shape& in, bool trainable, uint64_t seed) {
  auto p = std::make_unique<BnPair>();
  p->cpu = Bind(nn::BatchNorm::Create(j, "bn", in, "test"), trainable);
  if (p->cpu == nullptr) return nullptr;
  const int c = in.back();
  const bool scale = j.value("scale", true), center = j.value("center", true);
  p->gamma = Shifted(RandomVector(c, seed), 0.5f, 1.0f);
  p->beta = RandomVector(c, seed + 1, 0.5f);
  p->moving_mean = RandomVector(c, seed + 2, 0.5f);
  p->moving_var = Shifted(RandomVector(c, seed + 3), 0.4f, 1.0f);
  if (scale) p->cpu->Set("gamma", p->gamma);
  if (center) p->cpu->Set("beta", p->beta);
  p->cpu->Set("moving_mean", p->moving_mean);
  p->cpu->Set("moving_variance", p->moving_var);
  EmuBatchNorm& g = p->gpu;
  g.c = c;
  g.training_mode = trainable;
  g.synchronized = j.value("synchronized", false);
  g.eps = static_cast<float>(j.value("epsilon", 0.001));
  g.momentum = static_cast<float>(j.value("momentum", 0.99));
  g.gamma = scale ? p->gamma.data() : nullptr;
  g.beta = center ? p->beta.data() : nullptr;
  g.moving_mean = p->moving_mean.data();
  g.moving_var = p->moving_var.data();
  p->dgamma.assign(static_cast<size_t>(c), 123.0f);
  p->dbeta.assign(static_cast<size_t>(c), 123.0f);
  if (trainable) {
    if (scale) g.dgamma = p->dgamma.data();
    if (center) g.dbeta = p->dbeta.data();
    p->stats.assign(2 * static_cast<size_t>(c), NAN);
    g.stats = p->stats.data();
  }
  return p;
}

int64_t Rows(const nn::Shape& in, int batch) { return batch * nn::NumElements(in) / in.back(); }

// Forward (training and inference), Backward and the moving statistics of the CPU layer
// and the emulated kernel; bit-identical when `exact`, else within `tol`.
void CheckBn(const json& j, const nn::Shape& in, int batch, bool trainable, bool relu, bool exact,
             double tol = 1e-6) {
  SCOPED_TRACE(j.dump() + " on " + nn::ShapeToString(in) + " x " + std::to_string(batch) +
               (trainable ? "" : " frozen") + (relu ? " relu" : ""));
  auto p = MakeBn(j, in, trainable, 7);
  ASSERT_NE(p, nullptr);
  const int c = in.back();
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(nn::NumElements(in));
  const std::vector<float> x = Shifted(RandomVector(n, 11), 1.5f, 0.7f);
  const std::vector<float> dy = RandomVector(n, 12);
  if (relu) {
    ASSERT_TRUE(p->cpu->kernel().AbsorbRelu());
    p->gpu.relu = true;
  }
  auto compare = [&](const float* got, const float* want, size_t count, const std::string& what) {
    if (exact) {
      ExpectSameBits(got, want, count, what);
    } else {
      ExpectClose(got, want, count, tol, what);
    }
  };
  // An inference Forward: the moving statistics, bit for bit whatever the size.
  const float* want = p->cpu->Forward(x.data(), batch, false);
  const float* got = p->gpu.Forward(x.data(), Rows(in, batch), false);
  ExpectSameBits(got, want, n, "inference output");
  // A training Forward and Backward.
  want = p->cpu->Forward(x.data(), batch, true);
  got = p->gpu.Forward(x.data(), Rows(in, batch), true);
  compare(got, want, n, "training output");
  if (trainable) compare(p->stats.data(), p->cpu->stats(), p->stats.size(), "reduced statistics");
  const float* want_dx = p->cpu->Backward(dy.data(), true);
  const float* got_dx = p->gpu.Backward(dy.data(), true);
  ASSERT_NE(want_dx, nullptr);
  ASSERT_NE(got_dx, nullptr);
  compare(got_dx, want_dx, n, "input gradient");
  const bool scale = j.value("scale", true), center = j.value("center", true);
  if (trainable && scale) compare(p->dgamma.data(), p->cpu->grad("gamma"), static_cast<size_t>(c), "gamma gradient");
  if (trainable && center) compare(p->dbeta.data(), p->cpu->grad("beta"), static_cast<size_t>(c), "beta gradient");
  if (!trainable) {
    EXPECT_EQ(p->dgamma, std::vector<float>(static_cast<size_t>(c), 123.0f)) << "a frozen gamma got a gradient";
    EXPECT_EQ(p->dbeta, std::vector<float>(static_cast<size_t>(c), 123.0f)) << "a frozen beta got a gradient";
  }
  // Backward without the input gradient still writes the weights' gradients.
  std::fill(p->dgamma.begin(), p->dgamma.end(), 5.0f);
  p->cpu->Backward(dy.data(), false);
  EXPECT_EQ(p->gpu.Backward(dy.data(), false), nullptr);
  if (trainable && scale) {
    compare(p->dgamma.data(), p->cpu->grad("gamma"), static_cast<size_t>(c), "gamma gradient without din");
  }
  if (!trainable) return;
  // The moving statistics from the summed statistics of two replicas (this one's twice, scaled).
  std::vector<float> sums(p->stats.size());
  for (size_t k = 0; k < sums.size(); ++k) sums[k] = p->cpu->stats()[k] + p->cpu->stats()[k] * 0.75f;
  p->cpu->ApplyReducedStats(sums.data(), 2);
  p->gpu.ApplyReducedStats(sums.data(), 2);
  ExpectSameBits(p->moving_mean.data(), p->cpu->param("moving_mean"), p->moving_mean.size(), "moving mean");
  ExpectSameBits(p->moving_var.data(), p->cpu->param("moving_variance"), p->moving_var.size(), "moving variance");
}

json Bn(bool center, bool scale) {
  return {{"type", "BatchNormalization"}, {"center", center}, {"scale", scale}, {"momentum", 0.9}};
}

TEST(NormMathBatchNorm, OneLaneIsTheCpusBits) {
  for (const auto& [center, scale] : {std::pair{true, true}, {false, true}, {true, false}, {false, false}}) {
    CheckBn(Bn(center, scale), {5, 6, 7}, 3, /*trainable=*/true, /*relu=*/false, /*exact=*/true);
    CheckBn(Bn(center, scale), {13}, 9, true, false, true);
  }
  CheckBn({{"type", "BatchNormalization"}, {"epsilon", 0.1}}, {1}, 4, true, false, true);
  CheckBn(Bn(true, true), {64, 64, 1}, 1, true, false, true);  // exactly kOneLaneRows rows
}

TEST(NormMathBatchNorm, FusedReluIsTheCpusBits) {
  CheckBn(Bn(true, true), {4, 4, 6}, 3, true, /*relu=*/true, true);
  CheckBn(Bn(true, true), {4, 4, 6}, 3, false, /*relu=*/true, true);
}

TEST(NormMathBatchNorm, FrozenIsInferenceMode) {
  for (const auto& [center, scale] : {std::pair{true, true}, {false, false}}) {
    CheckBn(Bn(center, scale), {3, 5, 4}, 2, /*trainable=*/false, false, true);
  }
}

TEST(NormMathBatchNorm, ManyLanesAgreeToRounding) {
  // 2 x 50 x 41 = 4,100 rows: 33 chunks of 125..128, the last short.
  CheckBn(Bn(true, true), {50, 41, 3}, 2, true, false, /*exact=*/false, 1e-6);
  CheckBn(Bn(false, true), {9000}, 1, true, false, false, 1e-6);
  CheckBn(Bn(true, true), {20, 20, 17}, 40, true, true, false, 1e-6);
}

TEST(NormMathBatchNorm, LaneRowsCoverEveryRowOnce) {
  for (int64_t rows : {0, 1, 5, 4096, 4097, 5000, 12345, 65536}) {
    const int64_t lanes = nm::SumLanes(rows);
    EXPECT_EQ(lanes, rows <= nm::kOneLaneRows ? 1 : (rows + nm::kLaneRows - 1) / nm::kLaneRows);
    int64_t next = 0;
    for (int64_t l = 0; l < lanes; ++l) {
      int64_t begin, end;
      nm::LaneRows(rows, lanes, l, &begin, &end);
      ASSERT_EQ(begin, std::min(next, rows)) << rows << " lane " << l;
      ASSERT_LE(begin, end);
      next = end;
    }
    EXPECT_EQ(next, rows);
  }
}

// Synchronized BatchNorm across replicas run as threads: the emulated kernel's host
// all-reduce (the same floats, in the same calls) gives each replica the CPU layer's bits.
TEST(NormMathBatchNorm, SynchronizedReplicasAreTheCpusBits) {
  const json j = {{"type", "BatchNormalization"}, {"synchronized", true}, {"momentum", 0.8}};
  const nn::Shape in = {3, 4, 5};
  const std::vector<int> batches = {2, 3, 1};
  const int replicas = static_cast<int>(batches.size());
  std::vector<std::unique_ptr<BnPair>> pairs;
  for (int r = 0; r < replicas; ++r) {
    pairs.push_back(MakeBn(j, in, true, 3));
    ASSERT_NE(pairs.back(), nullptr);
  }
  nn::testing::ThreadAllReduce cpu_reduce(replicas), gpu_reduce(replicas);
  std::vector<backends::StepContext> gpu_ctx(static_cast<size_t>(replicas));
  for (int r = 0; r < replicas; ++r) {
    pairs[r]->cpu->ctx.replica = gpu_ctx[r].replica = r;
    pairs[r]->cpu->ctx.num_replicas = gpu_ctx[r].num_replicas = replicas;
    pairs[r]->cpu->ctx.all_reduce_sum = cpu_reduce.For(r);
    gpu_ctx[r].all_reduce_sum = gpu_reduce.For(r);
    pairs[r]->gpu.step = &gpu_ctx[r];
  }
  const size_t per = static_cast<size_t>(nn::NumElements(in));
  std::vector<std::vector<float>> xs, dys, want_y(replicas), got_y(replicas), want_dx(replicas), got_dx(replicas);
  for (int r = 0; r < replicas; ++r) {
    xs.push_back(Shifted(RandomVector(batches[r] * per, 20 + r), 2.0f, 0.5f * r));
    dys.push_back(RandomVector(batches[r] * per, 30 + r));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < replicas; ++r) {
    threads.emplace_back([&, r] {
      BnPair& p = *pairs[r];
      const size_t n = batches[r] * per;
      const float* y = p.cpu->Forward(xs[r].data(), batches[r], true);
      want_y[r].assign(y, y + n);
      const float* dx = p.cpu->Backward(dys[r].data(), true);
      want_dx[r].assign(dx, dx + n);
      y = p.gpu.Forward(xs[r].data(), Rows(in, batches[r]), true);
      got_y[r].assign(y, y + n);
      dx = p.gpu.Backward(dys[r].data(), true);
      got_dx[r].assign(dx, dx + n);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(cpu_reduce.calls(), 2);
  EXPECT_EQ(gpu_reduce.calls(), 2) << "one collective in Forward, one in Backward";
  for (int r = 0; r < replicas; ++r) {
    SCOPED_TRACE("replica " + std::to_string(r));
    ExpectSameBits(got_y[r], want_y[r], "output");
    BnPair& p = *pairs[r];
    ExpectSameBits(p.stats.data(), p.cpu->stats(), p.stats.size(), "reduced statistics");
    ExpectSameBits(got_dx[r], want_dx[r], "input gradient");
    ExpectSameBits(p.dgamma.data(), p.cpu->grad("gamma"), p.dgamma.size(), "gamma gradient");
    ExpectSameBits(p.dbeta.data(), p.cpu->grad("beta"), p.dbeta.size(), "beta gradient");
  }
}

// A failed collective: the output is left as it is, no statistics written, and Backward
// returns its buffer without a second collective succeeding.
TEST(NormMathBatchNorm, SynchronizedFailedCollective) {
  const json j = {{"type", "BatchNormalization"}, {"synchronized", true}};
  auto p = MakeBn(j, {2, 3}, true, 5);
  ASSERT_NE(p, nullptr);
  backends::StepContext ctx;
  ctx.num_replicas = 2;
  int calls = 0;
  ctx.all_reduce_sum = [&](float*, size_t) {
    ++calls;
    return false;
  };
  p->gpu.step = &ctx;
  const std::vector<float> x = RandomVector(4 * 6, 3);
  p->gpu.Forward(x.data(), 8, true);
  EXPECT_EQ(calls, 1);
  for (float s : p->stats) EXPECT_TRUE(std::isnan(s)) << "statistics written after a failed collective";
}

// ---------------------------------------------------------------- LayerNorm

// GpuLayerNorm (layer_norm_kernel.cc) with the device passes run on the host.
struct EmuLayerNorm {
  int64_t row = 0;
  float eps = 0.001f;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float *dgamma = nullptr, *dbeta = nullptr;
  std::vector<float> y, mean, invstd, dx;
  const float* x = nullptr;
  int64_t rows = 0;

  const float* Forward(const float* in, int64_t in_rows) {
    x = in;
    rows = in_rows;
    y.resize(static_cast<size_t>(rows * row));
    mean.resize(static_cast<size_t>(rows));
    invstd.resize(static_cast<size_t>(rows));
    const int threads = nm::RowThreads(row);
    std::vector<double> part(static_cast<size_t>(threads));
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * row;
      for (int t = 0; t < threads; ++t) part[t] = nm::RowPartSum(xr, row, t, threads);
      const double m = nm::TreeSum(part.data(), threads) / static_cast<double>(row);
      for (int t = 0; t < threads; ++t) part[t] = nm::RowPartSqDev(xr, row, m, t, threads);
      const double q = nm::TreeSum(part.data(), threads);
      mean[r] = static_cast<float>(m);
      invstd[r] = nm::RowInvStd(q, row, eps);
      for (int64_t k = 0; k < row; ++k) y[r * row + k] = nm::LnOutput(xr[k], mean[r], invstd[r], gamma, beta, k);
    }
    return y.data();
  }

  const float* Backward(const float* dy, bool need_din) {
    if (dgamma != nullptr || dbeta != nullptr) {
      std::vector<double> sg(static_cast<size_t>(row)), sb(sg.size());
      TwoPassColumnSums(
          rows, row,
          [&](int64_t begin, int64_t end, int64_t k, double* g, double* b) {
            nm::LnParamGradChunk(dy, x, mean.data(), invstd.data(), begin, end, row, k, g, b);
          },
          sg.data(), sb.data());
      for (int64_t k = 0; k < row; ++k) {
        if (dgamma != nullptr) dgamma[k] = static_cast<float>(sg[k]);
        if (dbeta != nullptr) dbeta[k] = static_cast<float>(sb[k]);
      }
    }
    if (!need_din) return nullptr;
    dx.resize(static_cast<size_t>(rows * row));
    const int threads = nm::RowThreads(row);
    std::vector<double> pg(static_cast<size_t>(threads)), pgx(pg.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* dr = dy + r * row;
      const float* xr = x + r * row;
      for (int t = 0; t < threads; ++t) {
        nm::RowPartGradSums(dr, xr, gamma, row, mean[r], invstd[r], t, threads, &pg[t], &pgx[t]);
      }
      const float mg = nm::RowMean(nm::TreeSum(pg.data(), threads), row);
      const float mgx = nm::RowMean(nm::TreeSum(pgx.data(), threads), row);
      for (int64_t k = 0; k < row; ++k) {
        dx[r * row + k] = nm::LnInputGrad(nm::LnScaledGrad(dr[k], gamma, k), nm::Xhat(xr[k], mean[r], invstd[r]),
                                          invstd[r], mg, mgx);
      }
    }
    return dx.data();
  }
};

void CheckLn(const json& j, const nn::Shape& in, int batch, double tol) {
  SCOPED_TRACE(j.dump() + " on " + nn::ShapeToString(in) + " x " + std::to_string(batch));
  auto cpu = Bind(nn::LayerNorm::Create(j, "ln", in, "test"));
  ASSERT_NE(cpu, nullptr);
  const ops::Op op = cpu->layer->op();
  const size_t row = static_cast<size_t>(op.row_size);
  std::vector<float> gamma = Shifted(RandomVector(row, 1), 0.5f, 1.0f), beta = RandomVector(row, 2, 0.5f);
  std::vector<float> dgamma(row, 123.0f), dbeta(row, 123.0f);
  EmuLayerNorm gpu;
  gpu.row = op.row_size;
  gpu.eps = op.epsilon;
  if (op.scale) {
    cpu->Set("gamma", gamma);
    gpu.gamma = gamma.data();
    gpu.dgamma = dgamma.data();
  }
  if (op.center) {
    cpu->Set("beta", beta);
    gpu.beta = beta.data();
    gpu.dbeta = dbeta.data();
  }
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(nn::NumElements(in));
  const std::vector<float> x = Shifted(RandomVector(n, 3), 2.0f, 1.5f), dy = RandomVector(n, 4);
  const int64_t rows = static_cast<int64_t>(n / row);
  ExpectClose(gpu.Forward(x.data(), rows), cpu->Forward(x.data(), batch, true), n, tol, "output");
  const float* want_dx = cpu->Backward(dy.data(), true);
  ExpectClose(gpu.Backward(dy.data(), true), want_dx, n, tol, "input gradient");
  if (op.scale) {
    ExpectClose(dgamma.data(), cpu->grad("gamma"), row, tol, "gamma gradient");
  } else {
    EXPECT_EQ(dgamma, std::vector<float>(row, 123.0f));
  }
  if (op.center) {
    ExpectClose(dbeta.data(), cpu->grad("beta"), row, tol, "beta gradient");
  } else {
    EXPECT_EQ(dbeta, std::vector<float>(row, 123.0f));
  }
}

TEST(NormMathLayerNorm, AgreesWithTheCpuLayer) {
  const json last = {{"type", "LayerNormalization"}};
  CheckLn(last, {7}, 5, 1e-6);
  CheckLn(last, {1}, 4, 1e-6);  // one element per row: xhat 0
  CheckLn(last, {3, 33}, 4, 1e-6);
  CheckLn(last, {300}, 3, 1e-6);   // more elements than threads
  CheckLn(last, {2, 1000}, 2, 1e-6);
  CheckLn({{"type", "LayerNormalization"}, {"axis", json::array({-2, -1})}}, {4, 5, 6}, 3, 1e-6);
  CheckLn({{"type", "LayerNormalization"}, {"axis", json::array({-3, -2, -1})}, {"epsilon", 0.1}}, {4, 5, 6}, 2, 1e-6);
  CheckLn({{"type", "LayerNormalization"}, {"center", false}}, {6, 10}, 3, 1e-6);
  CheckLn({{"type", "LayerNormalization"}, {"scale", false}}, {6, 10}, 3, 1e-6);
  CheckLn({{"type", "LayerNormalization"}, {"center", false}, {"scale", false}}, {6, 10}, 3, 1e-6);
  // 4,100 rows: the gamma and beta gradients' many-chunk path.
  CheckLn(last, {5}, 4100, 1e-6);
}

TEST(NormMathLayerNorm, RowThreadsAndTreeOrder) {
  EXPECT_EQ(nm::RowThreads(1), 32);
  EXPECT_EQ(nm::RowThreads(32), 32);
  EXPECT_EQ(nm::RowThreads(33), 64);
  EXPECT_EQ(nm::RowThreads(256), 256);
  EXPECT_EQ(nm::RowThreads(100000), nm::kMaxRowThreads);
  // The tree adds pairwise: ((0 + 2) + (1 + 3)) for four threads.
  std::vector<double> part = {1e16, 1.0, -1e16, 1.0};
  EXPECT_EQ(nm::TreeSum(part.data(), 4), (1e16 + -1e16) + (1.0 + 1.0));
}

}  // namespace
}  // namespace ringtrain::gpu
