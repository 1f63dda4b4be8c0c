#include "nn/model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "common/logging.h"
#include "backends/cpu/cpu_backend.h"
#include "common/memory_bound.h"
#include "executor/executor.h"
#include "nn/initializers/initializers.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/model_build.h"
#include "nn/model_summary.h"

namespace ringtrain::nn {

struct Model::Impl {
  internal::LayerGraph graph;
  size_t input_size = 0;
  std::vector<ModelIo> inputs, outputs;
  // first_trainable[i]: where layer i's trainable weights start in params()/grads()
  // (the total of those before it), so after layer i's Backward, grads()[first_trainable[i]
  // .. num_trainable) are final.
  std::vector<size_t> first_trainable;
  std::vector<size_t> first_stat;  // where layer i's reduced statistics start, after the gradients
  // params: the trainable weights in layer order, then the non-trainable ones (frozen
  // layers' weights, moving statistics). grads: the trainable weights' gradients, then
  // the layers' reduced statistics: one buffer for one all-reduce.
  std::vector<float> params, grads;
  size_t num_trainable = 0, num_stats = 0;
  std::vector<ParamInfo> infos;  // in layer order, each layer's weights in ParamSpecs() order
  std::vector<size_t> layer_first_info;  // index into infos of layer i's first weight
  StepContext context;
  // A training Forward copies its input here: kernels keep pointers into it for
  // Backward, and the caller's buffer may be reused before then.
  std::vector<float> input_copy;
  // The CPU backend and the executor that runs the layers' op graph on it.
  std::unique_ptr<backends::Backend> backend;
  std::unique_ptr<executor::Executor> exec;
  bool ready_for_backward = false;
  float empty_logits[1] = {0.0f};

  // The buffers the kernels read their weights from and write their gradients and
  // statistics to, at the graph's offsets; the step they run in.
  backends::KernelArgs Args() {
    backends::KernelArgs a;
    a.params = params.data();
    a.grads = grads.data();
    a.step = &context;
    return a;
  }
};


namespace {
std::atomic<bool> g_relu_fusion{true};
}  // namespace

void Model::SetReluFusion(bool enabled) { g_relu_fusion.store(enabled); }

Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

namespace {

uint64_t Count(const std::vector<int64_t>& shape) {
  uint64_t count = 1;  // saturating: absurd shapes must not wrap around to a small count
  for (int64_t d : shape) count = SatMul(count, static_cast<uint64_t>(d));
  return count;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> Model::FromJson(const nlohmann::json& model_json, uint64_t seed) {
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  RT_RETURN_IF_ERROR(internal::BuildLayerGraph(model_json, &m.graph));
  const auto& layers = m.graph.layers;
  const size_t nl = layers.size();
  m.input_size = static_cast<size_t>(NumElements(m.graph.input_shape));
  m.inputs = m.graph.model_inputs;
  if (m.inputs.empty()) m.inputs.push_back({m.graph.input_name, m.graph.input_shape, 0, m.input_size});
  m.outputs = m.graph.model_outputs;
  if (m.outputs.empty()) {
    const Layer& last = *layers.back();
    m.outputs.push_back({last.name(), last.output_shape(), 0, static_cast<size_t>(last.output_size())});
  }

  // Two passes over the weights: the trainable ones first, in layer order, then the
  // rest, so the all-reduced gradient buffer is one prefix of the weights'.
  // A call of a shared layer (LayerGraph::shares) has no weights of its own.
  std::vector<std::vector<ParamSpec>> specs(nl);
  std::vector<std::vector<bool>> trains(nl);
  for (size_t l = 0; l < nl; ++l) {
    if (m.graph.shares[l] >= 0) continue;
    specs[l] = layers[l]->ParamSpecs();
    for (const ParamSpec& s : specs[l]) trains[l].push_back(layers[l]->trainable() && s.trainable);
  }
  std::vector<std::vector<size_t>> offsets(nl);
  size_t total = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t l = 0; l < nl; ++l) {
      if (pass == 0) m.first_trainable.push_back(total);
      offsets[l].resize(specs[l].size());
      for (size_t k = 0; k < specs[l].size(); ++k) {
        if (trains[l][k] != (pass == 0)) continue;
        offsets[l][k] = total;
        total = SatAdd(total, Count(specs[l][k].shape));
        if (total > internal::kMaxParams) {
          return InvalidArgumentError("model: more than 2^31 - 1 parameters (at " + layers[l]->name() + "/" +
                                      specs[l][k].suffix + "); make the model smaller");
        }
      }
    }
    if (pass == 0) m.num_trainable = total;
  }
  for (size_t l = 0; l < nl; ++l) {
    m.first_stat.push_back(m.num_trainable + m.num_stats);
    m.num_stats += layers[l]->ReducedStatsSize();
  }
  m.params.assign(total, 0.0f);
  m.grads.assign(m.num_trainable + m.num_stats, 0.0f);
  size_t index = 0;  // the weight's position in layer order: its initialiser's stream
  for (size_t l = 0; l < nl; ++l) {
    m.layer_first_info.push_back(m.infos.size());
    for (size_t k = 0; k < specs[l].size(); ++k) {
      const ParamSpec& s = specs[l][k];
      ParamInfo info;
      info.name = layers[l]->name() + "/" + s.suffix;
      info.shape = s.shape;
      info.offset = offsets[l][k];
      info.count = static_cast<size_t>(Count(s.shape));
      info.trainable = trains[l][k];
      info.regularizer = s.regularizer;
      float* w = m.params.data() + info.offset;
      Initialize(s.init, w, info.count, s.fan_in, s.fan_out, seed, index);
      m.infos.push_back(std::move(info));
      ++index;
    }
  }

  const std::vector<bool> up = m.graph.TrainableUpstream();
  ops::Graph graph;
  graph.input_shape = m.graph.input_shape;
  graph.num_params = total;
  graph.num_trainable = m.num_trainable;
  graph.num_reduced = m.grads.size();
  for (size_t l = 0; l < nl; ++l) {
    const Layer& layer = *layers[l];
    ops::Node node;
    node.name = layer.name();
    node.class_name = layer.class_name();
    node.op = layer.op();
    node.inputs = m.graph.inputs[l];
    node.input_shapes = layer.input_shapes();
    node.output_shape = layer.output_shape();
    for (size_t k = 0; k < specs[l].size(); ++k) {
      const ParamInfo& info = m.infos[m.layer_first_info[l] + k];
      node.params.push_back({info.name, info.shape, info.offset, info.count, info.trainable});
    }
    if (const int root = m.graph.shares[l]; root >= 0) {
      // The root's weights (contiguous: all trainable, checked when the graph was built),
      // at offsets relative to the first.
      node.shares = root;
      const std::vector<ops::ParamRef>& refs = graph.nodes[static_cast<size_t>(root)].params;
      node.shared_params = refs.empty() ? 0 : refs[0].offset;
      size_t at = 0;
      for (ops::ParamRef p : refs) {
        if (p.offset != node.shared_params + at) {
          return InternalError("model: the weights of shared layer '" + layer.name() + "' are not contiguous");
        }
        p.offset = at;
        at += p.count;
        node.params.push_back(std::move(p));
      }
    }
    node.first_trainable = m.first_trainable[l];
    node.first_stat = m.first_stat[l];
    node.num_stats = layer.ReducedStatsSize();
    for (int k : node.inputs) node.need_input_grad.push_back(k != internal::kModelInput && up[static_cast<size_t>(k)]);
    node.run_backward = up[l];
    node.consumers = m.graph.consumers[l];
    graph.nodes.push_back(std::move(node));
  }
  // The ops run as the CPU backend's kernels; the fusion pass (a relu into the node
  // before it, a node into the Add it feeds) keeps the unfused bits.
  m.backend = backends::NewCpuBackend();
  executor::PlanOptions plan;
  plan.fuse = g_relu_fusion.load();
  RT_ASSIGN_OR_RETURN(m.exec, executor::Executor::Create(std::move(graph), m.backend.get(), plan));
  return model;
}

const std::vector<int>& Model::input_shape() const { return impl_->graph.input_shape; }
const std::vector<ModelIo>& Model::inputs() const { return impl_->inputs; }
const std::vector<ModelIo>& Model::outputs() const { return impl_->outputs; }
bool Model::internal_node(size_t i) const { return i < impl_->graph.internal.size() && impl_->graph.internal[i]; }
size_t Model::input_size() const { return impl_->input_size; }
int Model::num_classes() const { return impl_->graph.layers.back()->output_shape().back(); }
size_t Model::output_positions() const {
  const std::vector<int>& shape = impl_->graph.layers.back()->output_shape();
  size_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}
const std::vector<int>& Model::output_shape() const { return impl_->graph.layers.back()->output_shape(); }
size_t Model::output_size() const { return output_positions() * static_cast<size_t>(num_classes()); }
float* Model::params() { return impl_->params.data(); }
const float* Model::params() const { return impl_->params.data(); }
float* Model::grads() { return impl_->grads.data(); }
size_t Model::num_params() const { return impl_->params.size(); }
size_t Model::num_trainable() const { return impl_->num_trainable; }
size_t Model::num_reduced() const { return impl_->grads.size(); }
const std::vector<ParamInfo>& Model::param_infos() const { return impl_->infos; }
bool Model::sequential() const { return impl_->graph.sequential; }
const std::string& Model::input_name() const { return impl_->graph.input_name; }

void Model::set_step_context(const StepContext& context) { impl_->context = context; }

const StepContext& Model::step_context() const { return impl_->context; }

void Model::ApplyReducedStats(int num_replicas) {
  Impl& m = *impl_;
  const Status s = m.exec->ApplyReducedStats(m.Args(), num_replicas);
  if (!s.ok()) RT_LOG(ERROR) << "nn::Model::ApplyReducedStats: " << s.ToString();
}

const float* Model::Forward(const float* input, int batch, bool training) {
  Impl& m = *impl_;
  m.ready_for_backward = false;
  if (batch <= 0) return m.empty_logits;
  const float* x = input;
  if (training) {
    const size_t n = static_cast<size_t>(batch) * m.input_size;
    if (m.input_copy.size() < n) m.input_copy.resize(n);  // never shrinks: no allocation in steady state
    float* copy = m.input_copy.data();
    std::memcpy(copy, input, static_cast<size_t>(batch) * m.input_size * sizeof(float));
    x = copy;
  }
  // The CPU kernels cannot fail; a failure here is a bug, and zero logits are safer than none.
  auto out = m.exec->Forward(m.Args(), x, batch, training);
  if (!out.ok()) {
    RT_LOG(ERROR) << "nn::Model::Forward: " << out.status().ToString();
    return m.empty_logits;
  }
  m.ready_for_backward = training;
  return *out;
}

void Model::Backward(const float* grad_logits) { Backward(grad_logits, nullptr); }

void Model::Backward(const float* grad_logits, const std::function<void(size_t)>& on_ready) {
  Impl& m = *impl_;
  if (!m.ready_for_backward) {
    // A caller bug (Backward without a training Forward, or after an evaluation
    // Forward reused the buffers): zero gradients are safer than stale ones.
    RT_LOG(ERROR) << "nn::Model::Backward called without a preceding training Forward; gradients set to zero";
    std::fill(m.grads.begin(), m.grads.begin() + static_cast<std::ptrdiff_t>(m.num_trainable), 0.0f);
    return;
  }
  const Status s = m.exec->Backward(m.Args(), grad_logits, on_ready);
  if (!s.ok()) RT_LOG(ERROR) << "nn::Model::Backward: " << s.ToString();
}

const ops::Graph& Model::graph() const { return impl_->exec->graph(); }

std::string Model::Summary() const { return SummaryTable(Summarize(*this)); }

}  // namespace ringtrain::nn
