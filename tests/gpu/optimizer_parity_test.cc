// GpuOptimizer and GpuRegularization (backends/cuda/optimizer_kernels.h) on a GPU against
// the host: every optimizer and option (weight_decay, clipnorm, global_clipnorm,
// clipvalue) for a few steps, a learning rate that moves between them, against
// nn::Optimizer::Apply on the same parameters, gradients and slots; the regularization's
// gradient and penalty against nn/model_regularization.h. The updates are the CPU's bits
// (optimizer_math.h); so is the penalty of weights of up to om::kSumBlock elements.
//
// Needs a CUDA GPU: without one every test skips, saying why. An optimizer the build
// refuses (rmsprop, adagrad or nadam while their nn classes expose no hyperparameter
// accessors) is reported and not compared.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "backends/cuda/optimizer_kernels.h"
#include "gpu/op_parity.h"
#include "nn/model.h"
#include "nn/model_regularization.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::gpu {
namespace {

using nlohmann::json;

std::vector<float> Random(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

template <typename T>
void Put(DeviceBuffer<T>* d, const std::vector<T>& h) {
  ASSERT_TRUE(d->Allocate(h.size(), "test buffer", 0).ok());
  if (!h.empty()) ASSERT_EQ(cudaMemcpy(d->get(), h.data(), d->bytes(), cudaMemcpyHostToDevice), cudaSuccess);
}

template <typename T>
std::vector<T> Get(const T* d, size_t n) {
  std::vector<T> h(n);
  if (n > 0) EXPECT_EQ(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

// The same bits, or NaN on both sides.
void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << what << " differs at " << i << ": " << got[i]
                                                                << " vs " << want[i];
  }
}

std::unique_ptr<nn::Optimizer> Make(const json& j) {
  auto o = nn::Optimizer::FromJson(j);
  EXPECT_TRUE(o.ok()) << j.dump() << ": " << o.status().ToString();
  return o.ok() ? std::move(o).value() : nullptr;
}

// Variables (a piece boundary inside the second and fourth) and their ParamInfos.
const std::vector<size_t> kSizes = {300, 40000, 9, 16385, 1000};

class OptimizerParity : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_IF_DEVICE_UNAVAILABLE(backends::Device::kCuda);
    auto ctx = GpuContext::Create(0);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    ctx_ = std::move(ctx).value();
    ASSERT_TRUE(ctx_->MakeCurrent().ok());
  }

  // Runs `j` for `steps` steps on both sides; false when the build refuses the optimizer.
  bool Run(const json& j, int steps, bool nan_gradient = false) {
    SCOPED_TRACE(j.dump());
    std::vector<nn::VariableSpan> vars;
    std::vector<nn::ParamInfo> params;
    size_t n = 0;
    for (size_t k = 0; k < kSizes.size(); ++k) {
      vars.push_back({"w" + std::to_string(k), n, kSizes[k]});
      nn::ParamInfo p;
      p.name = vars.back().name;
      p.offset = n;
      p.count = kSizes[k];
      params.push_back(p);
      n += kSizes[k];
    }
    std::unique_ptr<nn::Optimizer> cpu = Make(j), host = Make(j);
    if (!cpu || !host) return true;
    cpu->SetVariables(vars);
    host->SetVariables(vars);
    auto created = GpuOptimizer::Create(host.get(), n, params, ctx_.get());
    if (!created.ok() && created.status().code() == Code::kUnimplemented &&
        created.status().message().find("accessors") != std::string::npos) {
      std::cout << "[ REFUSED  ] " << j.dump() << ": " << created.status().message() << "\n";
      return false;
    }
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) return true;
    std::unique_ptr<GpuOptimizer> gpu = std::move(created).value();

    // The engine's LoadFromHost: the host's (initial) slots onto the device.
    std::vector<float*> slots = gpu->slots();
    auto state = host->state();
    EXPECT_EQ(slots.size(), state.size());
    if (slots.size() != state.size()) return true;
    for (size_t s = 0; s < slots.size(); ++s) {
      EXPECT_EQ(cudaMemcpy(slots[s], state[s].second->data(), n * sizeof(float), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    std::vector<float> cpu_p = Random(n, 1, 2.0f);
    DeviceBuffer<float> p, g;
    Put(&p, cpu_p);
    for (int step = 0; step < steps; ++step) {
      std::vector<float> grads = Random(n, 10 + step, step % 2 == 0 ? 1.0f : 1e-3f);
      for (size_t i = 0; i < 300; ++i) grads[i] *= 1e-4f;  // a variable clipnorm leaves alone
      if (nan_gradient) grads[n / 2] = NAN;
      Put(&g, grads);
      const double lr = j.value("learning_rate", 0.01) * (1.0 - 0.1 * step);
      cpu->set_learning_rate(lr);
      host->set_learning_rate(lr);
      cpu->Apply(cpu_p.data(), grads.data(), n);
      const Status applied = gpu->Apply(p.get(), g.get());
      EXPECT_TRUE(applied.ok()) << applied.ToString();
      EXPECT_TRUE(ctx_->SyncCompute("the optimizer step").ok());
      host->set_iterations(host->iterations() + 1);
      const std::string at = " after step " + std::to_string(step + 1);
      ExpectSame(Get(p.get(), n), cpu_p, "params" + at);
      auto want = cpu->state();
      for (size_t s = 0; s < slots.size(); ++s) ExpectSame(Get(slots[s], n), *want[s].second, want[s].first + at);
      if (HasFatalFailure()) break;
    }
    return true;
  }

  std::unique_ptr<GpuContext> ctx_;
};

TEST_F(OptimizerParity, EveryOptimizer) {
  const std::vector<json> configs = {
      {{"type", "sgd"}, {"learning_rate", 0.1}},
      {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.9}},
      {{"type", "sgd"}, {"learning_rate", 0.05}, {"momentum", 0.8}, {"nesterov", true}},
      {{"type", "adam"}},
      {{"type", "adam"}, {"amsgrad", true}, {"beta_1", 0.8}},
      {{"type", "adamw"}},
      {{"type", "adamw"}, {"amsgrad", true}, {"weight_decay", 0.1}},
      {{"type", "rmsprop"}},
      {{"type", "rmsprop"}, {"momentum", 0.9}},
      {{"type", "rmsprop"}, {"centered", true}, {"rho", 0.8}},
      {{"type", "rmsprop"}, {"momentum", 0.5}, {"centered", true}},
      {{"type", "adagrad"}, {"learning_rate", 0.01}},
      {{"type", "adagrad"}, {"initial_accumulator_value", 0.0}, {"epsilon", 1e-5}},
      {{"type", "nadam"}},
  };
  int refused = 0;
  for (const json& j : configs) refused += Run(j, 4) ? 0 : 1;
  if (refused > 0) std::cout << refused << " of " << configs.size() << " configurations refused by this build\n";
}

TEST_F(OptimizerParity, EveryOption) {
  int refused = 0, runs = 0;
  for (const char* type : {"sgd", "adam", "rmsprop", "adagrad", "nadam"}) {
    json base = {{"type", type}, {"learning_rate", 0.01}};
    if (std::string(type) == "sgd" || std::string(type) == "rmsprop") base["momentum"] = 0.9;
    for (const json& option : {json{{"clipnorm", 1.0}}, json{{"global_clipnorm", 5.0}}, json{{"clipvalue", 0.25}},
                               json{{"weight_decay", 0.01}}, json{{"clipnorm", 0.3}, {"weight_decay", 0.5}},
                               json{{"global_clipnorm", 1e6}}}) {
      json j = base;
      j.update(option);
      ++runs;
      refused += Run(j, 3) ? 0 : 1;
    }
  }
  if (refused > 0) std::cout << refused << " of " << runs << " configurations refused by this build\n";
}

TEST_F(OptimizerParity, NanGradientClipped) {
  Run({{"type", "adam"}, {"clipnorm", 1.0}}, 2, /*nan_gradient=*/true);
  Run({{"type", "sgd"}, {"global_clipnorm", 1.0}}, 2, /*nan_gradient=*/true);
  Run({{"type", "sgd"}, {"clipvalue", 0.5}}, 2, /*nan_gradient=*/true);
}

TEST_F(OptimizerParity, ResetSlotsGivesTheInitialValues) {
  std::unique_ptr<nn::Optimizer> host = Make({{"type", "adam"}, {"amsgrad", true}});
  ASSERT_TRUE(host);
  auto gpu = GpuOptimizer::Create(host.get(), 1000, {}, ctx_.get());
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  ASSERT_EQ((*gpu)->slots().size(), 3u);
  ASSERT_TRUE((*gpu)->ResetSlots().ok());
  ASSERT_TRUE(ctx_->SyncCompute("reset").ok());
  for (float* s : (*gpu)->slots()) ExpectSame(Get(s, 1000), std::vector<float>(1000, 0.0f), "slot");
}

TEST_F(OptimizerParity, TrainableWeightsOutsideThePrefixAreRefused) {
  std::unique_ptr<nn::Optimizer> host = Make({{"type", "sgd"}});
  ASSERT_TRUE(host);
  nn::ParamInfo p;
  p.name = "dense/kernel";
  p.offset = 90;
  p.count = 20;
  auto gpu = GpuOptimizer::Create(host.get(), 100, {p}, ctx_.get());
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.status().message().find("dense/kernel"), std::string::npos) << gpu.status().ToString();
}

TEST_F(OptimizerParity, Regularization) {
  auto built = nn::Model::FromJson(json::parse(R"({"input_shape": [6, 6, 1], "layers": [
      {"type": "conv2d", "filters": 2, "kernel_size": 3, "activation": "relu",
       "kernel_regularizer": {"class_name": "L2", "config": {"l2": 0.05}}},
      {"type": "flatten"},
      {"type": "dense", "units": 5, "activation": "relu", "kernel_regularizer": "l1_l2",
       "bias_regularizer": {"class_name": "L1L2", "config": {"l1": 0.02, "l2": 0.03}}},
      {"type": "dense", "units": 3, "bias_regularizer": "l1", "kernel_regularizer": "l2", "trainable": false}]})"),
                                   7);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  nn::Model& model = **built;
  const size_t n = model.num_params(), trainable = model.num_trainable();
  auto created = GpuRegularization::Create(model.param_infos(), ctx_.get());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  GpuRegularization& reg = **created;
  ASSERT_TRUE(reg.active());

  const std::vector<float> w(model.params(), model.params() + n);
  const std::vector<float> g0 = Random(trainable, 3, 0.1f);
  DeviceBuffer<float> dw, dg;
  Put(&dw, w);
  for (const auto& [begin, end] : std::vector<std::pair<size_t, size_t>>{{0, trainable}, {7, trainable - 3}}) {
    Put(&dg, g0);
    ASSERT_TRUE(reg.AddGradients(dw.get(), dg.get(), begin, end, 0.5f).ok());
    std::copy(g0.begin(), g0.end(), model.grads());
    nn::AddRegularizationGradients(&model, begin, end, 0.5f);
    ASSERT_TRUE(ctx_->SyncCompute("regularization gradients").ok());
    ExpectSame(Get(dg.get(), trainable), std::vector<float>(model.grads(), model.grads() + trainable),
               "gradients [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
  }

  DeviceBuffer<double> out;
  Put(&out, std::vector<double>{-1.0, 2.5});
  ASSERT_TRUE(reg.Penalty(dw.get(), out.get()).ok());
  ASSERT_TRUE(reg.AddPenaltyToLoss(dw.get(), 32, out.get() + 1).ok());
  ASSERT_TRUE(ctx_->SyncCompute("regularization penalty").ok());
  const std::vector<double> got = Get(out.get(), 2);
  const double want = nn::RegularizationPenalty(model);
  EXPECT_EQ(got[0], want);
  EXPECT_EQ(got[1], 2.5 + 32.0 * want);

  // No regularizer: nothing to add, a zero penalty.
  auto none = GpuRegularization::Create({}, ctx_.get());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE((*none)->active());
  ASSERT_TRUE((*none)->Penalty(dw.get(), out.get()).ok());
  ASSERT_TRUE((*none)->AddPenaltyToLoss(dw.get(), 32, out.get() + 1).ok());
  ASSERT_TRUE(ctx_->SyncCompute("no regularization").ok());
  EXPECT_EQ(Get(out.get(), 2), (std::vector<double>{0.0, 2.5 + 32.0 * want}));
}

// A large model's worth of pieces (over a thousand per variable), twice: the same bits
// both times and the CPU's.
TEST_F(OptimizerParity, LargeVariablesDeterministic) {
  const size_t n = 24'000'000;
  std::vector<nn::VariableSpan> vars = {{"a", 0, 20'000'000}, {"b", 20'000'000, 4'000'000}};
  std::vector<float> result[2];
  for (int run = 0; run < 2; ++run) {
    std::unique_ptr<nn::Optimizer> host = Make({{"type", "adam"}, {"global_clipnorm", 1.0}, {"weight_decay", 0.01}});
    ASSERT_TRUE(host);
    host->SetVariables(vars);
    auto gpu = GpuOptimizer::Create(host.get(), n, {}, ctx_.get());
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    DeviceBuffer<float> p, g;
    Put(&p, Random(n, 5, 1.0f));
    Put(&g, Random(n, 6, 1.0f));
    ASSERT_TRUE((*gpu)->Apply(p.get(), g.get()).ok());
    ASSERT_TRUE(ctx_->SyncCompute("a large step").ok());
    result[run] = Get(p.get(), n);
  }
  ExpectSame(result[1], result[0], "second run");
  std::unique_ptr<nn::Optimizer> cpu = Make({{"type", "adam"}, {"global_clipnorm", 1.0}, {"weight_decay", 0.01}});
  ASSERT_TRUE(cpu);
  cpu->SetVariables(vars);
  std::vector<float> cpu_p = Random(n, 5, 1.0f);
  const std::vector<float> grads = Random(n, 6, 1.0f);
  cpu->Apply(cpu_p.data(), grads.data(), n);
  ExpectSame(result[0], cpu_p, "large adam step");
}

}  // namespace
}  // namespace ringtrain::gpu
