// The executor's plan: an op the backend lacks is refused before anything runs, in one
// line naming the layer, the op and the device; a backend that declares every op gets
// one kernel per node. Stand-in backends run here, without a GPU: one with the CUDA
// backend's declarations, one that lacks BatchNorm and grouped convolutions. The CPU
// backend makes its kernels from the nodes alone, and they give nn::Model's bits.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "executor/executor.h"
#include "nn/model.h"

namespace ringtrain::executor {
namespace {

using nlohmann::json;

// A "cuda" backend whose kernels copy nothing (the plan is what is tested). With
// `lacking` it refuses BatchNorm and grouped convolutions; without, it declares what the
// CUDA backend declares.
class DeclaredCudaBackend final : public backends::Backend {
 public:
  explicit DeclaredCudaBackend(bool lacking = false) : lacking_(lacking) {}
  backends::Device device() const override { return backends::Device::kCuda; }
  std::string Describe() const override { return "declared CUDA"; }
  Status Supports(const ops::Op& op) const override {
    if (lacking_ && op.kind == ops::OpKind::kBatchNorm) return UnimplementedError("no kernel in this test backend");
    if (lacking_ && op.kind == ops::OpKind::kConv2D && op.groups != 1) return UnimplementedError("groups");
    return backends::CudaSupports(op);
  }
  bool CanFuse(backends::Fusion, const ops::Op&) const override { return false; }
  StatusOr<std::unique_ptr<backends::Kernel>> NewKernel(const ops::Node& node) override {
    ++kernels_made;
    return std::unique_ptr<backends::Kernel>(new Identity());
  }
  StatusOr<backends::Buffer> Allocate(size_t, const std::string&) override { return backends::Buffer(); }
  Status Copy(void*, const void*, size_t, Direction) override { return Status::Ok(); }
  Status Synchronize(const std::string&) override { return Status::Ok(); }
  Status AddArrays(const float*, const float*, const float*, size_t, float*) override { return Status::Ok(); }
  Status Accumulate(float*, const float*, size_t) override { return Status::Ok(); }

  int kernels_made = 0;

 private:
  bool lacking_;
  class Identity final : public backends::Kernel {
    StatusOr<const float*> Forward(const backends::KernelArgs&, const std::vector<const float*>& in, int,
                                   bool) override {
      return in[0];
    }
    Status Backward(const backends::KernelArgs&, const float*, const std::vector<bool>&,
                    std::vector<const float*>*) override {
      return Status::Ok();
    }
  };
};

std::unique_ptr<nn::Model> Build(const std::string& text) {
  auto m = nn::Model::FromJson(json::parse(text), 1);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(ExecutorPlanTest, AnOpTheBackendLacksIsRefusedInOneLineNamingLayerOpAndDevice) {
  auto m = Build(R"({"input_shape": [6, 6, 2], "layers": [
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "name": "c1"},
      {"type": "BatchNormalization", "name": "bn1"},
      {"type": "ReLU"}, {"type": "Flatten"}, {"type": "Dense", "units": 3}]})");
  ASSERT_NE(m, nullptr);
  DeclaredCudaBackend cuda(/*lacking=*/true);
  auto e = Executor::Create(m->graph(), &cuda, PlanOptions{});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kUnimplemented);
  const std::string msg = e.status().message();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("layer 'bn1' (BatchNormalization)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("op BatchNorm (training)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("device \"cuda\" (no kernel in this test backend)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("set the job's \"device\" to \"cpu\""), std::string::npos) << msg;
  EXPECT_EQ(cuda.kernels_made, 0) << "refused before any kernel was made";
}

TEST(ExecutorPlanTest, AnArgumentTheBackendLacksIsNamed) {
  auto m = Build(R"({"input_shape": [6, 6, 4], "layers": [
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "groups": 2, "name": "grouped"},
      {"type": "Flatten"}, {"type": "Dense", "units": 3}]})");
  ASSERT_NE(m, nullptr);
  DeclaredCudaBackend cuda(/*lacking=*/true);
  auto e = Executor::Create(m->graph(), &cuda, PlanOptions{});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("layer 'grouped' (Conv2D): op Conv2D (3x3, groups 2) does not run on device "
                                      "\"cuda\" (groups)"),
            std::string::npos)
      << e.status().message();
}

// A residual model with a frozen layer, BatchNorm and a grouped convolution plans on the
// CUDA declarations: one kernel per node.
TEST(ExecutorPlanTest, ResidualAndFrozenModelsPlanOnTheCudaDeclarations) {
  auto m = Build(R"({"input_shape": [6, 6, 2], "layers": [
      {"type": "Conv2D", "filters": 2, "kernel_size": 3, "padding": "same", "name": "c1", "trainable": false},
      {"type": "Conv2D", "filters": 2, "kernel_size": 3, "padding": "same", "activation": "relu", "name": "c2"},
      {"type": "Add", "inputs": ["c1", "c2"]},
      {"type": "BatchNormalization"}, {"type": "Conv2D", "filters": 2, "kernel_size": 1, "groups": 2},
      {"type": "MaxPooling2D", "pool_size": 2}, {"type": "Flatten"}, {"type": "Dense", "units": 3}]})");
  ASSERT_NE(m, nullptr);
  DeclaredCudaBackend cuda;
  auto e = Executor::Create(m->graph(), &cuda, PlanOptions{});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(cuda.kernels_made, 8);
  const ops::Graph& g = (*e)->graph();
  EXPECT_TRUE(g.nodes[0].has_frozen_weights());
  EXPECT_FALSE(g.nodes[0].run_backward) << "nothing trainable at or before the frozen first layer";
  EXPECT_EQ(g.nodes[2].need_input_grad, (std::vector<bool>{false, true}));
}

TEST(ExecutorPlanTest, TheCpuBackendFusesReluIntoBatchNormAndAddAndBatchNormIntoAdd) {
  auto cpu = backends::NewCpuBackend();
  ops::Op op;
  for (ops::OpKind kind : ops::AllOpKinds()) {
    op.kind = kind;
    const bool bn = kind == ops::OpKind::kBatchNorm, add = kind == ops::OpKind::kAdd;
    EXPECT_EQ(cpu->CanFuse(backends::Fusion::kReluIntoProducer, op), bn || add) << ops::OpKindName(kind);
    EXPECT_EQ(cpu->CanFuse(backends::Fusion::kProducerIntoAdd, op), bn) << ops::OpKindName(kind);
    EXPECT_TRUE(cpu->Supports(op).ok());
  }
}

// The CPU backend makes the kernel of every node from the node alone, Dropout's and the
// augmentation layers' included.
TEST(ExecutorPlanTest, TheCpuBackendMakesEveryKernel) {
  auto m = Build(R"({"input_shape": [8, 8, 3], "layers": [
      {"type": "Rescaling", "scale": 0.5},
      {"type": "RandomFlip"},
      {"type": "RandomTranslation", "height_factor": 0.1, "width_factor": 0.1},
      {"type": "RandomRotation", "factor": 0.1},
      {"type": "RandomCrop", "height": 8, "width": 8},
      {"type": "ZeroPadding2D", "padding": 1},
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "name": "c1"},
      {"type": "BatchNormalization"}, {"type": "ReLU"},
      {"type": "DepthwiseConv2D", "kernel_size": 3, "padding": "same"},
      {"type": "SeparableConv2D", "filters": 4, "kernel_size": 3, "padding": "same", "name": "s1"},
      {"type": "Add", "inputs": ["c1", "s1"]},
      {"type": "Multiply", "inputs": ["c1", "s1"]},
      {"type": "Concatenate", "inputs": ["add", "multiply"]},
      {"type": "LayerNormalization"},
      {"type": "MaxPooling2D"}, {"type": "AveragePooling2D", "pool_size": 1},
      {"type": "Dropout", "rate": 0.5, "name": "drop"},
      {"type": "GlobalAveragePooling2D"}, {"type": "Dense", "units": 3, "activation": "softmax"}]})");
  ASSERT_NE(m, nullptr);
  auto cpu = backends::NewCpuBackend();
  std::set<ops::OpKind> kinds;
  for (const ops::Node& node : m->graph().nodes) {
    auto kernel = cpu->NewKernel(node);
    EXPECT_TRUE(kernel.ok()) << node.Label() << ": " << kernel.status().ToString();
    kinds.insert(node.op.kind);
  }
  for (ops::OpKind kind : {ops::OpKind::kDropout, ops::OpKind::kRandomFlip, ops::OpKind::kRandomTranslation,
                           ops::OpKind::kRandomRotation, ops::OpKind::kRandomCrop}) {
    EXPECT_EQ(kinds.count(kind), 1u) << ops::OpKindName(kind);
  }
}

// An executor planned on the CPU backend gives the model's output and gradients bit for
// bit (the model runs the same kernels, fused alike), the random ops drawing the same in
// the same step.
TEST(ExecutorPlanTest, TheCpuBackendsKernelsGiveTheModelsBits) {
  auto m = Build(R"({"input_shape": [6, 6, 2], "layers": [
      {"type": "RandomFlip"},
      {"type": "RandomTranslation", "height_factor": 0.2, "width_factor": 0.2},
      {"type": "RandomRotation", "factor": 0.1, "fill_mode": "constant"},
      {"type": "RandomCrop", "height": 5, "width": 5},
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "padding": "same", "name": "c1"},
      {"type": "BatchNormalization", "name": "bn"}, {"type": "ReLU"},
      {"type": "Conv2D", "filters": 4, "kernel_size": 3, "padding": "same", "activation": "gelu"},
      {"type": "BatchNormalization", "name": "bn2"},
      {"type": "Add", "inputs": ["bn2", "c1"]}, {"type": "ReLU"},
      {"type": "GlobalMaxPooling2D"}, {"type": "Dropout", "rate": 0.25}, {"type": "Dense", "units": 3}]})");
  ASSERT_NE(m, nullptr);
  auto cpu = backends::NewCpuBackend();
  auto e = Executor::Create(m->graph(), cpu.get(), PlanOptions{});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const int batch = 3;
  std::vector<float> x(static_cast<size_t>(batch) * m->input_size()), dy(static_cast<size_t>(batch) * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>((i * 13) % 7) / 3.0f - 1.0f;

  std::vector<float> params(m->params(), m->params() + m->num_params()), grads(m->num_reduced(), 0.0f);
  backends::StepContext step;
  step.seed = 3;
  step.step = 2;
  m->set_step_context(step);
  backends::KernelArgs args;
  args.params = params.data();
  args.grads = grads.data();
  args.step = &step;
  auto y = (*e)->Forward(args, x.data(), batch, true);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  const std::vector<float> got_y(*y, *y + dy.size());
  ASSERT_TRUE((*e)->Backward(args, dy.data(), nullptr).ok());
  ASSERT_TRUE((*e)->ApplyReducedStats(args, 1).ok());

  const float* want_y = m->Forward(x.data(), batch, true);
  EXPECT_EQ(got_y, std::vector<float>(want_y, want_y + dy.size()));
  m->Backward(dy.data());
  EXPECT_EQ(grads, std::vector<float>(m->grads(), m->grads() + m->num_reduced())) << "gradients and statistics";
  m->ApplyReducedStats(1);
  EXPECT_EQ(params, std::vector<float>(m->params(), m->params() + m->num_params())) << "moving statistics";
}

}  // namespace
}  // namespace ringtrain::executor
