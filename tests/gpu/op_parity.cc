#include "gpu/op_parity.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "nn/layer.h"
#include "nn/model.h"

#if defined(RINGTRAIN_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/gpu_context.h"
#endif

namespace ringtrain::testing {
namespace {

constexpr double kTolerance = 1e-4;

double RelErr(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;  // e.g. a gradient never written
    if (std::isnan(want[i])) continue;
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return diff / std::max(scale, 1e-6);
}

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

// Device memory of a backend holding a host vector's values.
class DeviceVector {
 public:
  DeviceVector(backends::Backend* b, const std::vector<float>& host) : b_(b), n_(host.size()) {
    auto buf = b->Allocate(std::max<size_t>(n_, 1) * sizeof(float), "test data");
    EXPECT_TRUE(buf.ok()) << buf.status().ToString();
    if (buf.ok()) buf_ = std::move(buf).value();
    if (n_ > 0 && buf_.get() != nullptr) {
      EXPECT_TRUE(b->Copy(buf_.get(), host.data(), n_ * sizeof(float), backends::Backend::Direction::kHostToDevice).ok());
    }
  }
  float* get() const { return buf_.floats(); }

 private:
  backends::Backend* b_;
  size_t n_;
  backends::Buffer buf_;
};

std::vector<float> Download(backends::Backend* b, const float* p, size_t n) {
  std::vector<float> host(n, NAN);
  if (n > 0 && p != nullptr) {
    EXPECT_TRUE(b->Copy(host.data(), p, n * sizeof(float), backends::Backend::Direction::kDeviceToHost).ok());
    EXPECT_TRUE(b->Synchronize("the test's copy").ok());
  }
  return host;
}

// What one run of the op gives.
struct Result {
  std::vector<float> y;
  std::vector<std::vector<float>> din;
  std::vector<float> grads;   // the whole gradient buffer (gradients, then statistics)
  std::vector<float> params;  // after ApplyReducedStats
};

#if defined(RINGTRAIN_HAVE_CUDA)
std::unique_ptr<gpu::GpuContext> g_cuda;  // one context for the whole test program
#endif

}  // namespace

std::string DeviceUnavailable(backends::Device device) {
  if (device == backends::Device::kCpu) return "";
#if defined(RINGTRAIN_HAVE_CUDA)
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return std::string("no CUDA GPU (") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
           "): the cuda parity cases need one";
  }
  if (count == 0) return "no CUDA GPU (cudaGetDeviceCount found 0 devices): the cuda parity cases need one";
  return "";
#else
  return "this build has no CUDA backend (cmake/cuda.cmake found no CUDA toolkit and cuDNN)";
#endif
}

std::string DeviceParamName(const ::testing::TestParamInfo<backends::Device>& info) {
  return backends::DeviceName(info.param);
}

void CheckOp(backends::Device device, const OpCase& c) {
  SCOPED_TRACE(c.label + " on " + backends::DeviceName(device));
  // A model ends with one value per class: a Flatten after the op under test (a view).
  nlohmann::json model_json = c.model;
  nlohmann::json& under_test = model_json["layers"].back();
  if (!under_test.contains("name")) under_test["name"] = "under_test";
  const std::string name = under_test["name"].get<std::string>();
  model_json["layers"].push_back({{"type", "flatten"}, {"name", "parity_flatten"}});
  auto model_or = nn::Model::FromJson(model_json, 7);
  ASSERT_TRUE(model_or.ok()) << model_or.status().ToString();
  nn::Model& model = **model_or;
  const auto& nodes = model.graph().nodes;
  const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const ops::Node& n) { return n.name == name; });
  ASSERT_NE(it, nodes.end());
  ops::Node node = *it;
  for (int k : node.inputs) ASSERT_EQ(k, ops::kModelInput) << "the op under test must take the model input";
  node.need_input_grad.assign(node.inputs.size(), true);
  node.run_backward = true;

  // Weights: random, the variances positive.
  std::vector<float> params(model.num_params());
  for (const ops::ParamRef& p : node.params) {
    const bool variance = p.name.size() >= 8 && p.name.compare(p.name.size() - 8, 8, "variance") == 0;
    const std::vector<float> v = Random(p.count, 11 + p.offset, variance ? 0.5f : -0.5f, variance ? 1.5f : 0.5f);
    std::copy(v.begin(), v.end(), params.begin() + static_cast<std::ptrdiff_t>(p.offset));
  }
  const size_t grad_n = model.num_reduced();
  const size_t in_n = static_cast<size_t>(c.batch) * model.input_size();
  const size_t out_n = static_cast<size_t>(c.batch) * static_cast<size_t>(node.output_size());
  const std::vector<float> x = Random(in_n, 12, -1.0f, 1.0f, c.step);
  const std::vector<float> dy = Random(out_n, 13, -1.0f, 1.0f);
  nn::StepContext context;
  context.seed = 5;
  context.step = c.train_step;

  // One run of the op's kernel on a backend, from the same weights, input and output gradient.
  auto run = [&](backends::Backend* backend, backends::Kernel* kernel, Result* r) {
    DeviceVector d_params(backend, params), d_grads(backend, std::vector<float>(grad_n, NAN));
    DeviceVector d_x(backend, x), d_dy(backend, dy);
    ASSERT_TRUE(kernel->Reserve(c.batch).ok());
    auto ws = kernel->PrepareBatch(c.batch);
    ASSERT_TRUE(ws.ok()) << ws.status().ToString();
    backends::Buffer workspace;
    if (*ws > 0) {
      auto w = backend->Allocate(*ws, "workspace");
      ASSERT_TRUE(w.ok()) << w.status().ToString();
      workspace = std::move(w).value();
    }
    backends::KernelArgs args;
    args.params = d_params.get();
    args.grads = d_grads.get();
    args.workspace = workspace.get();
    args.workspace_bytes = workspace.bytes();
    args.step = &context;
    const std::vector<const float*> in(node.inputs.size(), d_x.get());
    auto y = kernel->Forward(args, in, c.batch, c.training);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    r->y = Download(backend, *y, out_n);
    if (!c.training) return;
    std::vector<const float*> din(node.inputs.size(), nullptr);
    const Status back = kernel->Backward(args, d_dy.get(), node.need_input_grad, &din);
    ASSERT_TRUE(back.ok()) << back.ToString();
    for (size_t k = 0; k < din.size(); ++k) {
      ASSERT_NE(din[k], nullptr) << "input " << k << "'s gradient";
      r->din.push_back(Download(backend, din[k], in_n));
    }
    r->grads = Download(backend, d_grads.get(), grad_n);
    if (node.num_stats > 0) {
      ASSERT_TRUE(kernel->ApplyReducedStats(args, d_grads.get() + node.first_stat, 1).ok());
    }
    r->params = Download(backend, d_params.get(), params.size());
  };

  // The op's CPU kernel, as nn::Model makes it: the reference.
  auto cpu = backends::NewCpuBackend();
  auto reference_kernel = cpu->NewKernel(node);
  ASSERT_TRUE(reference_kernel.ok()) << reference_kernel.status().ToString();
  Result want;
  ASSERT_NO_FATAL_FAILURE(run(cpu.get(), reference_kernel->get(), &want));

  Result got;
  if (device == backends::Device::kCpu) {
    ASSERT_TRUE(cpu->Supports(node.op).ok());
    auto kernel = cpu->NewKernel(node);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    ASSERT_NO_FATAL_FAILURE(run(cpu.get(), kernel->get(), &got));
  } else {
#if defined(RINGTRAIN_HAVE_CUDA)
    if (g_cuda == nullptr) {
      auto ctx = gpu::GpuContext::Create(0);
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      g_cuda = std::move(ctx).value();
    }
    std::unique_ptr<backends::Backend> cuda = gpu::NewCudaBackend(g_cuda.get());
    const Status supported = cuda->Supports(node.op);
    ASSERT_TRUE(supported.ok()) << ops::Describe(node.op) << ": " << supported.ToString();
    auto kernel = cuda->NewKernel(node);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    ASSERT_NO_FATAL_FAILURE(run(cuda.get(), kernel->get(), &got));
#else
    FAIL() << DeviceUnavailable(device);
#endif
  }

  EXPECT_LE(RelErr(got.y, want.y), kTolerance) << "forward output";
  if (!c.training) return;
  ASSERT_EQ(got.din.size(), want.din.size());
  for (size_t k = 0; k < want.din.size(); ++k) EXPECT_LE(RelErr(got.din[k], want.din[k]), kTolerance) << "input " << k << " gradient";
  for (const ops::ParamRef& p : node.params) {
    if (!p.trainable) continue;
    const auto at = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(p.offset),
                                v.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count));
    };
    EXPECT_LE(RelErr(at(got.grads), at(want.grads)), kTolerance) << p.name << " gradient";
  }
  if (node.num_stats > 0) {
    const auto stats = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(node.first_stat),
                                v.begin() + static_cast<std::ptrdiff_t>(node.first_stat + node.num_stats));
    };
    EXPECT_LE(RelErr(stats(got.grads), stats(want.grads)), kTolerance) << "reduced statistics";
  }
  EXPECT_LE(RelErr(got.params, want.params), kTolerance) << "weights after ApplyReducedStats";
}

}  // namespace ringtrain::testing
