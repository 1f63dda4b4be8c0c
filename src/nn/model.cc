#include "nn/model.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "common/logging.h"
#include "common/memory_bound.h"
#include "kernels/elementwise.h"
#include "nn/initializers/initializers.h"
#include "nn/keras/json_fields.h"
#include "nn/layer.h"
#include "nn/model_build.h"

namespace ringtrain::nn {

struct Model::Impl {
  internal::LayerGraph graph;
  size_t input_size = 0;
  // need_din[i][k]: layer i must pass a gradient back to its input k (a layer feeding
  // it has trainable weights). run_backward[i]: layer i's Backward runs at all.
  std::vector<std::vector<bool>> need_din;
  std::vector<bool> run_backward;
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
  // A training Forward copies its input here: layers keep pointers into it for
  // Backward, and the caller's buffer may be reused before then.
  std::vector<float> input_copy;
  std::vector<const float*> outputs;  // per layer, of the last Forward
  // Backward: the gradient w.r.t. each layer's output, and sums for outputs that feed
  // several layers (a residual connection).
  std::vector<const float*> dout;
  std::vector<int> pending;  // contributions still to come per layer
  std::vector<std::vector<float>> dsum;
  // The layer that took over the relu whose output is layer l's (l itself, or the relu
  // layer l passes through), -1 for none: a gradient summed for l is masked in the same
  // pass (Layer::ReluGradientMask).
  std::vector<int> mask_owner;
  // Scratch for the input and input-gradient pointers of a layer of several inputs,
  // kept here so Forward/Backward allocate nothing after the first call.
  std::vector<const float*> in, din;
  int batch = 0;  // of the last training Forward
  bool ready_for_backward = false;
  float empty_logits[1] = {0.0f};
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

  // Two passes over the weights: the trainable ones first, in layer order, then the
  // rest, so the all-reduced gradient buffer is one prefix of the weights'.
  std::vector<std::vector<ParamSpec>> specs(nl);
  std::vector<std::vector<bool>> trains(nl);
  for (size_t l = 0; l < nl; ++l) {
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
    std::vector<float*> p, g;
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
      p.push_back(w);
      g.push_back(info.trainable ? m.grads.data() + info.offset : nullptr);
      m.infos.push_back(std::move(info));
      ++index;
    }
    layers[l]->BindParams(p, g);
    layers[l]->set_context(&m.context);
    if (layers[l]->ReducedStatsSize() > 0) layers[l]->BindReducedStats(m.grads.data() + m.first_stat[l]);
  }

  const std::vector<bool> up = m.graph.TrainableUpstream();
  m.need_din.resize(nl);
  m.run_backward.assign(nl, false);
  for (size_t l = 0; l < nl; ++l) {
    for (int k : m.graph.inputs[l]) {
      m.need_din[l].push_back(k != internal::kModelInput && up[static_cast<size_t>(k)]);
    }
    m.run_backward[l] = up[l];
  }
  // A plain relu whose input feeds nothing else runs inside the layer before it, when
  // that layer can take it over (Layer::AbsorbRelu): the same bits, fewer passes.
  m.mask_owner.assign(nl, -1);
  for (size_t l = 0; l < nl && g_relu_fusion.load(); ++l) {
    if (!layers[l]->IsPlainRelu() || m.graph.inputs[l].size() != 1) continue;
    const int k = m.graph.inputs[l][0];
    if (k == internal::kModelInput || m.graph.consumers[static_cast<size_t>(k)] != 1) continue;
    if (layers[static_cast<size_t>(k)]->AbsorbRelu()) {
      layers[l]->PassThrough();
      m.mask_owner[l] = k;
    }
  }
  // A layer whose output feeds nothing but an Add of two inputs may be computed inside
  // the Add's pass (Layer::DeferToAdd): the same bits, one pass over memory fewer each way.
  for (size_t l = 0; l < nl && g_relu_fusion.load(); ++l) {
    const std::vector<int>& from = m.graph.inputs[l];
    if (!layers[l]->IsAddOfTwo() || from.size() != 2 || from[0] == from[1]) continue;
    for (size_t k = 0; k < 2; ++k) {
      const int src = from[k];
      if (src == internal::kModelInput || m.graph.consumers[static_cast<size_t>(src)] != 1) continue;
      if (layers[static_cast<size_t>(src)]->DeferToAdd()) {
        layers[l]->TakeDeferredInput(k, layers[static_cast<size_t>(src)].get());
        break;
      }
    }
  }
  m.outputs.assign(nl, nullptr);
  m.dout.assign(nl, nullptr);
  m.pending.assign(nl, 0);
  m.dsum.resize(nl);
  return model;
}

const std::vector<int>& Model::input_shape() const { return impl_->graph.input_shape; }
size_t Model::input_size() const { return impl_->input_size; }
int Model::num_classes() const { return impl_->graph.layers.back()->output_shape()[0]; }
float* Model::params() { return impl_->params.data(); }
const float* Model::params() const { return impl_->params.data(); }
float* Model::grads() { return impl_->grads.data(); }
size_t Model::num_params() const { return impl_->params.size(); }
size_t Model::num_trainable() const { return impl_->num_trainable; }
size_t Model::num_reduced() const { return impl_->grads.size(); }
const std::vector<ParamInfo>& Model::param_infos() const { return impl_->infos; }
bool Model::sequential() const { return impl_->graph.sequential; }

void Model::set_step_context(const StepContext& context) { impl_->context = context; }

void Model::ApplyReducedStats(int num_replicas) {
  Impl& m = *impl_;
  for (size_t l = 0; l < m.graph.layers.size(); ++l) {
    if (m.graph.layers[l]->ReducedStatsSize() == 0) continue;
    m.graph.layers[l]->ApplyReducedStats(m.grads.data() + m.first_stat[l], num_replicas);
  }
}

const float* Model::Forward(const float* input, int batch, bool training) {
  Impl& m = *impl_;
  m.ready_for_backward = false;
  if (batch <= 0) return m.empty_logits;
  const float* x = input;
  if (training) {
    float* copy = EnsureSize(m.input_copy, static_cast<size_t>(batch) * m.input_size);
    std::memcpy(copy, input, static_cast<size_t>(batch) * m.input_size * sizeof(float));
    x = copy;
    m.batch = batch;
  }
  std::vector<const float*>& in = m.in;
  for (size_t l = 0; l < m.graph.layers.size(); ++l) {
    Layer& layer = *m.graph.layers[l];
    const std::vector<int>& from = m.graph.inputs[l];
    if (from.size() == 1) {
      const int k = from[0];
      m.outputs[l] = layer.Forward(k == internal::kModelInput ? x : m.outputs[static_cast<size_t>(k)], batch, training);
    } else {
      in.clear();
      for (int k : from) in.push_back(k == internal::kModelInput ? x : m.outputs[static_cast<size_t>(k)]);
      m.outputs[l] = layer.ForwardInputs(in, batch, training);
    }
  }
  m.ready_for_backward = training;
  return m.outputs.back();
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
  const size_t nl = m.graph.layers.size();
  for (size_t l = 0; l < nl; ++l) m.pending[l] = m.graph.consumers[l];
  m.dout[nl - 1] = grad_logits;
  std::vector<const float*>& din = m.din;
  for (size_t i = nl; i-- > 0;) {
    if (!m.run_backward[i]) continue;  // no trainable weight at or before this layer
    Layer& layer = *m.graph.layers[i];
    const std::vector<int>& from = m.graph.inputs[i];
    din.assign(from.size(), nullptr);
    if (from.size() == 1) {
      din[0] = layer.Backward(m.dout[i], m.need_din[i][0]);
    } else {
      layer.BackwardInputs(m.dout[i], m.need_din[i], &din);
    }
    // Hand each input gradient to the layer that produced that input. An output that
    // feeds several layers gets the sum of their gradients, added in this fixed
    // (reverse layer) order.
    for (size_t k = 0; k < from.size(); ++k) {
      if (!m.need_din[i][k]) continue;
      const size_t src = static_cast<size_t>(from[k]);
      // The first contribution is kept by pointer (it stays valid: its layer has run;
      // the only one for an output that feeds one layer), the second is added to it
      // into dsum, later ones into dsum: first + second + ...
      const int seen = m.graph.consumers[src] - m.pending[src];
      if (seen == 0) {
        m.dout[src] = din[k];
      } else {
        const size_t n = static_cast<size_t>(m.batch) * static_cast<size_t>(m.graph.layers[src]->output_size());
        float* acc = EnsureSize(m.dsum[src], n);
        const int owner = m.mask_owner[src];
        if (seen == 1 && m.pending[src] == 1 && owner >= 0) {
          // The last of two contributions, bound for a fused relu: summed and masked in
          // one pass (the bits of the sum, then the mask), and the owner not masking again.
          Layer& fused = *m.graph.layers[static_cast<size_t>(owner)];
          kernels::AddArraysMasked(m.dout[src], din[k], fused.ReluGradientMask(), n, acc);
          fused.GradientMasked();
        } else if (seen == 1) {
          kernels::AddArrays(m.dout[src], din[k], n, /*relu=*/false, acc);
        } else {
          kernels::AccumulateArray(acc, din[k], n);
        }
        m.dout[src] = acc;
      }
      --m.pending[src];
    }
    // Layers run back to front, so every gradient from this layer's first one on is final.
    const size_t end = i + 1 < nl ? m.first_trainable[i + 1] : m.num_trainable;
    if (on_ready && end > m.first_trainable[i]) on_ready(m.first_trainable[i]);
  }
  if (on_ready) on_ready(0);
}

std::vector<LayerDesc> Model::layers() const {
  const Impl& m = *impl_;
  std::vector<LayerDesc> out;
  for (size_t l = 0; l < m.graph.layers.size(); ++l) {
    const Layer& layer = *m.graph.layers[l];
    LayerDesc d = layer.Describe();
    d.name = layer.name();
    if (d.class_name.empty()) d.class_name = layer.class_name();  // a layer may say more ("Dense with activation ...")
    d.input_shape = layer.input_shape();
    d.output_shape = layer.output_shape();
    d.inputs = m.graph.inputs[l];
    d.need_input_grad = !m.need_din[l].empty() && m.need_din[l][0];
    const size_t first = m.layer_first_info[l];
    const size_t nparams = layer.ParamSpecs().size();
    if (nparams >= 1) d.kernel_offset = m.infos[first].offset;
    if (nparams >= 2) d.bias_offset = m.infos[first + 1].offset;
    for (size_t k = 0; k < nparams; ++k) d.frozen = d.frozen || !m.infos[first + k].trainable;
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

std::string WithCommas(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() + 1 < width) s.append(width - s.size(), ' ');
  else s += ' ';
  return s;
}

}  // namespace

std::string Model::Summary() const {
  const Impl& m = *impl_;
  const auto& layers = m.graph.layers;
  const bool functional = !m.graph.sequential;
  auto source = [&](int k) { return k == internal::kModelInput ? m.graph.input_name : layers[static_cast<size_t>(k)]->name(); };
  size_t name_w = 29;
  for (const auto& layer : layers) {
    name_w = std::max(name_w, layer->name().size() + std::strlen(layer->class_name()) + 5);
  }
  const size_t shape_w = 26, param_w = 11, total_w = name_w + shape_w + (functional ? param_w + 26 : 10);
  std::string out = std::string("Model: \"") + (functional ? "functional" : "sequential") + "\"\n" +
                    std::string(total_w, '_') + "\n";
  out += Pad(" Layer (type)", name_w) + Pad("Output Shape", shape_w) + (functional ? Pad("Param #", param_w) + "Connected to\n" : "Param #\n");
  out += std::string(total_w, '=') + "\n";
  if (functional) {
    out += Pad(" " + m.graph.input_name + " (InputLayer)", name_w) + Pad(ShapeWithBatch(m.graph.input_shape), shape_w) +
           Pad("0", param_w) + "-\n";
    out += std::string(total_w, '_') + "\n";
  }
  uint64_t trainable = 0, frozen = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = *layers[l];
    uint64_t count = 0;
    const size_t first = m.layer_first_info[l];
    for (size_t k = 0; k < layer.ParamSpecs().size(); ++k) {
      const ParamInfo& info = m.infos[first + k];
      count += info.count;
      (info.trainable ? trainable : frozen) += info.count;
    }
    std::string line = Pad(" " + layer.name() + " (" + layer.class_name() + ")", name_w) +
                       Pad(ShapeWithBatch(layer.output_shape()), shape_w);
    if (functional) {
      std::string from;
      for (int k : m.graph.inputs[l]) from += (from.empty() ? "" : ", ") + source(k);
      line += Pad(WithCommas(count), param_w) + from;
    } else {
      line += WithCommas(count);
    }
    out += line + "\n" + std::string(total_w, l + 1 == layers.size() ? '=' : '_') + "\n";
  }
  out += "Total params: " + WithCommas(m.params.size()) + "\n";
  out += "Trainable params: " + WithCommas(trainable) + "\n";
  out += "Non-trainable params: " + WithCommas(frozen) + "\n" + std::string(total_w, '_') + "\n";
  return out;
}

}  // namespace ringtrain::nn
