// CPU vs GPU: every GPU layer against the CPU nn layer it mirrors (outputs, kernel and
// bias gradients, input gradients), then whole training steps through the CPU engine
// and the GPU engine (SGD with momentum, Nesterov, Adam; a host and a device
// communicator), evaluation, and the GPU's run-to-run determinism.
// Tolerance: max|gpu - cpu| / max(max|cpu|, 1e-6) <= 1e-4 per tensor.
//
// Needs a CUDA GPU; without one every test skips with the reason.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collective/communicator.h"
#include "engine/engine.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/gpu_context.h"
#include "engine/gpu_engine.h"
#include "engine/objective.h"
#include "kernels/impl.h"
#include "nn/optimizers/adam.h"
#include "nn/model.h"
#include "nn/optimizers/sgd.h"
#include "store/store.h"
#include "testing/source_dir.h"

namespace ringtrain::gpu {
namespace {

constexpr double kTolerance = 1e-4;

// Why there is no usable GPU ("" when there is one).
std::string NoGpuReason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  if (count == 0) return "cudaGetDeviceCount found 0 devices";
  return "";
}

#define SKIP_WITHOUT_GPU()                                                                     \
  do {                                                                                         \
    const std::string reason = NoGpuReason();                                                  \
    if (!reason.empty()) GTEST_SKIP() << "no CUDA GPU (" << reason << "): CPU-vs-GPU parity needs one"; \
  } while (0)

double RelErr(const float* gpu, const float* cpu, size_t n) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(gpu[i]) || std::isnan(cpu[i])) return INFINITY;  // e.g. a gradient never written
    diff = std::max(diff, std::fabs(static_cast<double>(gpu[i]) - cpu[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(cpu[i])));
  }
  return diff / std::max(scale, 1e-6);
}
double RelErr(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  if (gpu.size() != cpu.size()) return INFINITY;
  return RelErr(gpu.data(), cpu.data(), cpu.size());
}

// Deterministic values in [lo, hi); `step` > 0 rounds them to multiples of step (ties).
std::vector<float> Random(size_t n, uint64_t seed, float lo, float hi, float step = 0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) {
    x = u(rng);
    if (step > 0) x = std::round(x / step) * step;
  }
  return v;
}

template <typename T>
DeviceBuffer<T> Upload(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  EXPECT_TRUE(d.Allocate(std::max<size_t>(host.size(), 1), "test", 0).ok());
  if (!host.empty()) {
    EXPECT_EQ(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  return d;
}

template <typename T>
std::vector<T> Download(const T* d, size_t n) {
  std::vector<T> host(n);
  if (n > 0) {
    EXPECT_EQ(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return host;
}

// ---------------------------------------------------------------- training steps

nlohmann::json W2Model() {
  nlohmann::json job =
      nlohmann::json::parse(testing::ReadSourceFile("deploy/jobs/mnist_w2.json"), nullptr, /*allow_exceptions=*/false);
  if (!job.is_object() || !job.contains("model")) return nlohmann::json::object();  // FromJson then says why
  return job["model"];
}

enum class Opt { kSgdMomentum, kSgdNesterov, kAdam };

std::unique_ptr<nn::Optimizer> MakeOptimizer(Opt opt) {
  switch (opt) {
    case Opt::kSgdMomentum:
      return std::make_unique<nn::Sgd>(0.05, 0.9, false);
    case Opt::kSgdNesterov:
      return std::make_unique<nn::Sgd>(0.02, 0.8, true);
    case Opt::kAdam:
      break;
  }
  return std::make_unique<nn::Adam>(0.001, 0.9, 0.999, 1e-7);
}

struct Data {
  size_t example = 0;
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Data MakeData(size_t example, int n, int classes) {
  Data d;
  d.example = example;
  d.images = Random(example * n, 21, 0.0f, 1.0f);
  std::mt19937 rng(22);
  for (int i = 0; i < n; ++i) d.labels.push_back(static_cast<int32_t>(rng() % classes));
  return d;
}

struct TrainResult {
  std::vector<engine::BatchStats> steps;
  engine::BatchStats eval;
  std::vector<float> params;
  std::vector<std::vector<float>> slots;
  int64_t iterations = 0;
};

constexpr int kMaxBatch = 16;
const std::vector<int> kBatches = {16, 16, 9, 16, 16};  // 5 steps, one short
constexpr int kEvalBatch = 40;                            // more than max_batch: buffers grow

// The reduced gradients are rescaled by a per-step factor before the update, the same
// way on both engines: a size-1 all-reduce leaves the buffer as it was, so without this
// an engine that ignored the buffer GradientBuffer() handed out (e.g. a RING staging
// copy that never went back to the device) would still match. Powers of two: exact.
float StepGradientFactor(size_t step) { return step % 2 == 0 ? 1.0f : 0.25f; }

void ScaleGradients(float* grads, size_t n, bool on_device, float factor) {
  if (factor == 1.0f || n == 0) return;
  if (!on_device) {
    for (size_t i = 0; i < n; ++i) grads[i] *= factor;
    return;
  }
  std::vector<float> host = Download(grads, n);
  for (float& g : host) g *= factor;
  EXPECT_EQ(cudaMemcpy(grads, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
}

// The trainer's order: the next batch is submitted while the current step runs.
// reload_after > 0 (GPU only): after that many steps the state goes back to the host
// (StoreToHost) and a new engine continues from it (LoadFromHost: weights, slots).
void Train(bool gpu, Opt opt, collective::Implementation impl, TrainResult* out, size_t reload_after = 0) {
  auto model_or = nn::Model::FromJson(W2Model(), /*seed=*/7);
  ASSERT_TRUE(model_or.ok()) << model_or.status().ToString();
  std::unique_ptr<nn::Model> model = std::move(model_or).value();
  std::unique_ptr<nn::Optimizer> optimizer = MakeOptimizer(opt);
  std::unique_ptr<engine::Engine> engine;
  if (gpu) {
    auto e = NewGpuEngine(model.get(), optimizer.get(), kMaxBatch, 0);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine = std::move(e).value();
    ASSERT_TRUE(engine->on_gpu());
  } else {
    engine = engine::NewCpuEngine(model.get(), optimizer.get(), kMaxBatch);
  }
  store::InMemoryStore store;
  collective::CommunicatorOptions options;
  options.implementation = impl;
  auto comm_or = collective::CreateCommunicator(options, 0, 1, &store);
  ASSERT_TRUE(comm_or.ok()) << comm_or.status().ToString();
  std::unique_ptr<collective::Communicator> comm = std::move(comm_or).value();

  const size_t example = model->input_size();
  int total = 0;
  for (int b : kBatches) total += b;
  const Data data = MakeData(example, std::max(total, kEvalBatch), model->num_classes());
  const size_t n = model->num_params();
  float* grads = engine->GradientBuffer(*comm);

  int next = 0;  // first example of the next batch
  auto submit = [&](int batch) {
    std::memcpy(engine->next_images(), data.images.data() + next * example, batch * example * sizeof(float));
    std::memcpy(engine->next_labels(), data.labels.data() + next, batch * sizeof(int32_t));
    next += batch;
    return engine->SubmitBatch(batch);
  };
  ASSERT_TRUE(submit(kBatches[0]).ok());
  for (size_t s = 0; s < kBatches.size(); ++s) {
    ASSERT_TRUE(engine->StartStep(1.0f / kBatches[s]).ok());
    if (s + 1 < kBatches.size()) {
      ASSERT_TRUE(submit(kBatches[s + 1]).ok());
    }
    size_t last_ready = n + 1;
    auto stats = engine->FinishBackward([&](size_t offset) {
      EXPECT_LE(offset, last_ready);  // offsets never increase (the CPU may repeat 0)
      last_ready = offset;
    });
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(last_ready, 0u) << "on_ready's last call must be with 0";
    out->steps.push_back(*stats);
    ASSERT_TRUE(comm->AllReduce(grads, n, collective::ReduceOp::kSum).ok());
    ScaleGradients(grads, n, gpu && comm->accepts_device_memory(), StepGradientFactor(s));
    ASSERT_TRUE(engine->ApplyUpdate().ok());
    if (gpu && s + 1 == reload_after) {
      ASSERT_TRUE(engine->StoreToHost().ok());
      engine.reset();  // the batch submitted to it is dropped: submit it again below
      auto e = NewGpuEngine(model.get(), optimizer.get(), kMaxBatch, 0);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      engine = std::move(e).value();
      grads = engine->GradientBuffer(*comm);
      if (s + 1 < kBatches.size()) {
        next -= kBatches[s + 1];
        ASSERT_TRUE(submit(kBatches[s + 1]).ok());
      }
    }
  }
  auto eval = engine->Evaluate(data.images.data(), data.labels.data(), kEvalBatch);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  out->eval = *eval;
  ASSERT_TRUE(engine->StoreToHost().ok());
  out->params.assign(model->params(), model->params() + n);
  for (auto& [name, slot] : optimizer->state()) out->slots.push_back(*slot);
  out->iterations = optimizer->iterations();
}

void ExpectStatsNear(const engine::BatchStats& gpu, const engine::BatchStats& cpu, const std::string& what) {
  EXPECT_LE(std::fabs(gpu.loss_sum - cpu.loss_sum) / std::max(std::fabs(cpu.loss_sum), 1e-6), kTolerance)
      << what << ": loss sum " << gpu.loss_sum << " on the GPU, " << cpu.loss_sum << " on the CPU";
  EXPECT_EQ(gpu.metric_sums, cpu.metric_sums) << what;
}

void CheckTraining(Opt opt, collective::Implementation impl) {
  TrainResult cpu, gpu;
  ASSERT_NO_FATAL_FAILURE(Train(false, opt, collective::Implementation::kRing, &cpu));
  ASSERT_NO_FATAL_FAILURE(Train(true, opt, impl, &gpu));
  ASSERT_EQ(gpu.steps.size(), cpu.steps.size());
  for (size_t s = 0; s < cpu.steps.size(); ++s) ExpectStatsNear(gpu.steps[s], cpu.steps[s], "step " + std::to_string(s));
  ExpectStatsNear(gpu.eval, cpu.eval, "evaluation");
  EXPECT_LE(RelErr(gpu.params, cpu.params), kTolerance) << "parameters after " << kBatches.size() << " steps";
  ASSERT_EQ(gpu.slots.size(), cpu.slots.size());
  for (size_t i = 0; i < cpu.slots.size(); ++i) {
    ASSERT_EQ(gpu.slots[i].size(), cpu.params.size()) << "optimizer slot " << i << " not stored";
    EXPECT_LE(RelErr(gpu.slots[i], cpu.slots[i]), kTolerance) << "optimizer slot " << i;
  }
  EXPECT_EQ(gpu.iterations, static_cast<int64_t>(kBatches.size()));
  EXPECT_EQ(gpu.iterations, cpu.iterations);
}

TEST(GpuParityTest, TrainingStepsSgdMomentumMatchCpu) {
  SKIP_WITHOUT_GPU();
  CheckTraining(Opt::kSgdMomentum, collective::Implementation::kRing);
}

TEST(GpuParityTest, TrainingStepsSgdNesterovMatchCpu) {
  SKIP_WITHOUT_GPU();
  CheckTraining(Opt::kSgdNesterov, collective::Implementation::kRing);
}

TEST(GpuParityTest, TrainingStepsAdamMatchCpu) {
  SKIP_WITHOUT_GPU();
  CheckTraining(Opt::kAdam, collective::Implementation::kRing);
}

// NCCL reduces the device gradient buffer itself (no host mirror).
TEST(GpuParityTest, TrainingStepsAdamOverNcclMatchCpu) {
  SKIP_WITHOUT_GPU();
  store::InMemoryStore store;
  collective::CommunicatorOptions options;
  options.implementation = collective::Implementation::kNccl;
  auto probe = collective::CreateCommunicator(options, 0, 1, &store);
  if (!probe.ok()) GTEST_SKIP() << "no NCCL communicator: " << probe.status().ToString();
  EXPECT_STREQ((*probe)->backend_name(), "NCCL");
  probe = Status(Code::kAborted, "closed");  // one communicator at a time
  CheckTraining(Opt::kAdam, collective::Implementation::kNccl);
}

// StoreToHost then LoadFromHost into a new engine mid-run (weights, optimizer slots,
// iterations) continues exactly where the first engine was.
TEST(GpuParityTest, ReloadThroughHostContinuesTheSameRun) {
  SKIP_WITHOUT_GPU();
  for (Opt opt : {Opt::kSgdMomentum, Opt::kAdam}) {
    SCOPED_TRACE(opt == Opt::kAdam ? "adam" : "sgd momentum");
    TrainResult straight, reloaded;
    ASSERT_NO_FATAL_FAILURE(Train(true, opt, collective::Implementation::kRing, &straight));
    ASSERT_NO_FATAL_FAILURE(Train(true, opt, collective::Implementation::kRing, &reloaded, /*reload_after=*/2));
    ASSERT_EQ(straight.params.size(), reloaded.params.size());
    EXPECT_EQ(std::memcmp(straight.params.data(), reloaded.params.data(), straight.params.size() * sizeof(float)), 0);
    ASSERT_EQ(straight.slots.size(), reloaded.slots.size());
    for (size_t i = 0; i < straight.slots.size(); ++i) {
      EXPECT_EQ(straight.slots[i], reloaded.slots[i]) << "optimizer slot " << i;
    }
    EXPECT_EQ(straight.iterations, reloaded.iterations);
  }
}

TEST(GpuParityTest, SameStepsTwiceGiveTheSameBits) {
  SKIP_WITHOUT_GPU();
  TrainResult a, b;
  ASSERT_NO_FATAL_FAILURE(Train(true, Opt::kAdam, collective::Implementation::kRing, &a));
  ASSERT_NO_FATAL_FAILURE(Train(true, Opt::kAdam, collective::Implementation::kRing, &b));
  ASSERT_EQ(a.params.size(), b.params.size());
  EXPECT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (size_t i = 0; i < a.slots.size(); ++i) EXPECT_EQ(a.slots[i], b.slots[i]) << "optimizer slot " << i;
  for (size_t s = 0; s < a.steps.size(); ++s) {
    EXPECT_EQ(a.steps[s].loss_sum, b.steps[s].loss_sum) << "step " << s;
    EXPECT_EQ(a.steps[s].metric_sums, b.steps[s].metric_sums) << "step " << s;
  }
  EXPECT_EQ(a.eval.loss_sum, b.eval.loss_sum);
}

// One full training step of each shipped job (its model, loss and metrics) on the GPU engine
// against the CPU engine, with SGD at rate 1, so that the update is the gradient. A job's own
// optimizer would hide the comparison: Adam's first step turns a gradient that is rounding
// noise (a bias before BatchNormalization) into plus or minus the learning rate, whichever
// sign the noise has. The yardstick is the CPU against itself: its AVX-512 and portable
// kernels sum in other orders, and in deep models at initialization (ResNet-20: ReLU masks
// and BatchNormalization over few rows) their gradients differ by up to 3e-3 relative.
nlohmann::json Job(const std::string& name) {
  return nlohmann::json::parse(testing::ReadSourceFile("deploy/jobs/" + name + ".json"), nullptr,
                               /*allow_exceptions=*/false);
}

// ||(a - before) - (b - before)|| / ||b - before||: how far apart two updates of the same
// weights are.
double UpdateRelErr(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& before) {
  if (a.size() != b.size() || b.size() != before.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double ua = static_cast<double>(a[i]) - before[i], ub = static_cast<double>(b[i]) - before[i];
    if (std::isnan(ua)) return INFINITY;
    diff += (ua - ub) * (ua - ub);
    norm += ub * ub;
  }
  return norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? INFINITY : 0.0);
}

void OneStep(const nlohmann::json& job, bool gpu, std::vector<float>* params, engine::BatchStats* stats) {
  auto model_or = nn::Model::FromJson(job["model"], /*seed=*/3);
  ASSERT_TRUE(model_or.ok()) << model_or.status().ToString();
  std::unique_ptr<nn::Model> model = std::move(model_or).value();
  auto opt_or = nn::Optimizer::FromJson(job["optimizer"]);
  ASSERT_TRUE(opt_or.ok()) << opt_or.status().ToString();
  std::unique_ptr<nn::Optimizer> optimizer = std::move(opt_or).value();
  auto objective = engine::Objective::FromJson(job.value("loss", nlohmann::json()), job.value("metrics", nlohmann::json()),
                                               model->num_classes());
  ASSERT_TRUE(objective.ok()) << objective.status().ToString();
  const int batch = std::min(8, job.value("batch_size_per_worker", 8));
  std::unique_ptr<engine::Engine> e;
  if (gpu) {
    auto made = NewGpuEngine(model.get(), optimizer.get(), batch, 0);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    e = std::move(made).value();
  } else {
    e = engine::NewCpuEngine(model.get(), optimizer.get(), batch);
  }
  ASSERT_TRUE(e->SetObjective(&*objective).ok());
  store::InMemoryStore store;
  auto comm = collective::CreateCommunicator(collective::CommunicatorOptions{}, 0, 1, &store);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  float* grads = e->GradientBuffer(**comm);
  const Data data = MakeData(model->input_size(), batch, model->num_classes());
  std::memcpy(e->next_images(), data.images.data(), data.images.size() * sizeof(float));
  std::memcpy(e->next_labels(), data.labels.data(), data.labels.size() * sizeof(int32_t));
  ASSERT_TRUE(e->SubmitBatch(batch).ok());
  ASSERT_TRUE(e->StartStep(1.0f / batch).ok());
  auto s = e->FinishBackward(nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  *stats = *s;
  ASSERT_TRUE((*comm)->AllReduce(grads, model->num_reduced(), collective::ReduceOp::kSum).ok());
  ASSERT_TRUE(e->ApplyUpdate().ok());
  ASSERT_TRUE(e->StoreToHost().ok());
  params->assign(model->params(), model->params() + model->num_params());
}

// One SGD step of `job` (at rate 1) on the GPU against the CPU, within 4x the CPU's own
// spread between its kernel sets.
void CheckOneStep(const std::string& name, nlohmann::json job) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(job.is_object() && job.contains("model"));
  job["optimizer"] = {{"type", "sgd"}, {"learning_rate", 1.0}};
  std::vector<float> before, cpu, portable, gpu;
  engine::BatchStats cpu_stats, portable_stats, gpu_stats;
  {
    auto model = nn::Model::FromJson(job["model"], /*seed=*/3);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    before.assign((*model)->params(), (*model)->params() + (*model)->num_params());
  }
  ASSERT_NO_FATAL_FAILURE(OneStep(job, false, &cpu, &cpu_stats));
  kernels::SetForcePortable(true);
  OneStep(job, false, &portable, &portable_stats);
  kernels::SetForcePortable(false);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_NO_FATAL_FAILURE(OneStep(job, true, &gpu, &gpu_stats));
  const double spread = UpdateRelErr(portable, cpu, before);
  const double err = UpdateRelErr(gpu, cpu, before);
  std::printf("%s: the update's relative difference, GPU against CPU %.3e, the CPU's portable kernels against its "
              "AVX-512 ones %.3e\n", name.c_str(), err, spread);
  EXPECT_LE(err, std::max(kTolerance, 4 * spread)) << "the update (the gradient) of one step";
  ExpectStatsNear(gpu_stats, cpu_stats, "the step's loss and metrics");
}

TEST(GpuParityTest, OneStepOfEachShippedJobMatchesCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"mnist_w1", "mnist_w2", "mnist_w3", "mnist_residual", "resnet20_cifar_shape", "vgg16_bench",
                           "vgg16_transfer", "mobilenetv2_transfer"}) {
    CheckOneStep(name, Job(name));
  }
}

// A model with two inputs (each a crop of the input row) and a Conv2D called on both (its
// second call's gradients summed into the first's), as a Siamese network.
TEST(GpuParityTest, OneStepOfTwoInputsAndASharedLayerMatchesCpu) {
  SKIP_WITHOUT_GPU();
  const nlohmann::json job = nlohmann::json::parse(R"({"model": {
      "inputs": [{"name": "left", "shape": [8, 8, 1]}, {"name": "right", "shape": [8, 8, 1]}],
      "layers": [
        {"type": "conv2d", "name": "enc", "filters": 4, "kernel_size": 3, "activation": "relu", "inputs": ["left"]},
        {"shares": "enc", "name": "enc_1", "inputs": ["right"]},
        {"type": "concatenate", "name": "joined", "inputs": ["enc", "enc_1"]},
        {"type": "flatten", "name": "flat"},
        {"type": "dense", "name": "logits", "units": 10}]},
      "loss": {"type": "sparse_categorical_crossentropy", "from_logits": true}, "metrics": ["accuracy"],
      "batch_size_per_worker": 8})");
  CheckOneStep("siamese", job);
}

// The step protocol's misuse is refused, not run on stale buffers.
TEST(GpuParityTest, StepProtocolErrors) {
  SKIP_WITHOUT_GPU();
  auto model = nn::Model::FromJson(W2Model(), 7);
  ASSERT_TRUE(model.ok());
  nn::Adam adam(0.001, 0.9, 0.999, 1e-7);
  auto e = NewGpuEngine(model->get(), &adam, 4, 0);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  engine::Engine& engine = **e;
  EXPECT_EQ(engine.StartStep(1.0f).code(), Code::kFailedPrecondition);
  EXPECT_EQ(engine.SubmitBatch(0).code(), Code::kInvalidArgument);
  EXPECT_EQ(engine.SubmitBatch(5).code(), Code::kInvalidArgument);
  EXPECT_EQ(engine.FinishBackward(nullptr).status().code(), Code::kFailedPrecondition);
  EXPECT_NE(engine.Describe().find("GPU 0: "), std::string::npos) << engine.Describe();
  EXPECT_NE(engine.Describe().find("cuDNN "), std::string::npos) << engine.Describe();
  // A bad ordinal is refused at creation with the reason.
  auto bad = NewGpuEngine(model->get(), &adam, 4, 1000);
  EXPECT_EQ(bad.status().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace ringtrain::gpu
