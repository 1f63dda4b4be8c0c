#include "nn/model.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "common/logging.h"
#include "common/memory_bound.h"
#include "nn/init.h"
#include "nn/json_fields.h"
#include "nn/layer.h"
#include "nn/model_build.h"

namespace ringtrain::nn {

struct Model::Impl {
  Shape input_shape;
  size_t input_size = 0;
  std::vector<std::unique_ptr<Layer>> layers;
  // need_din[i]: some layer before i has parameters, so layer i must pass a gradient back.
  std::vector<bool> need_din;
  // first_param[i]: the offset where layer i's parameters start (the total before it).
  std::vector<size_t> first_param;
  std::vector<float> params, grads;
  std::vector<ParamInfo> infos;
  // A training Forward copies its input here: layers keep pointers into it for
  // Backward, and the caller's buffer may be reused before then.
  std::vector<float> input_copy;
  bool ready_for_backward = false;
  float empty_logits[1] = {0.0f};
};


Model::Model() : impl_(std::make_unique<Impl>()) {}
Model::~Model() = default;

StatusOr<std::unique_ptr<Model>> Model::FromJson(const nlohmann::json& model_json, uint64_t seed) {
  std::unique_ptr<Model> model(new Model());
  Impl& m = *model->impl_;
  RT_RETURN_IF_ERROR(internal::BuildModelLayers(model_json, &m.input_shape, &m.layers));
  m.input_size = static_cast<size_t>(NumElements(m.input_shape));

  // Lay out every tensor in one buffer, in layer order.
  std::vector<std::vector<ParamSpec>> specs;
  size_t total = 0;
  for (const auto& layer : m.layers) {
    m.first_param.push_back(total);
    specs.push_back(layer->ParamSpecs());
    for (const ParamSpec& s : specs.back()) {
      ParamInfo info;
      info.name = layer->name() + "/" + s.suffix;
      info.shape = s.shape;
      info.offset = total;
      uint64_t count = 1;  // saturating: absurd shapes must not wrap around to a small count
      for (int64_t d : s.shape) count = SatMul(count, static_cast<uint64_t>(d));
      info.count = static_cast<size_t>(count);
      total = SatAdd(total, count);
      if (total > internal::kMaxParams) {
        return InvalidArgumentError("model: more than 2^31 - 1 parameters (at " + info.name +
                                    "); make the model smaller");
      }
      m.infos.push_back(std::move(info));
    }
  }
  m.params.assign(total, 0.0f);
  m.grads.assign(total, 0.0f);
  size_t index = 0;
  bool params_before = false;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    std::vector<float*> p, g;
    for (const ParamSpec& s : specs[l]) {
      const ParamInfo& info = m.infos[index];
      if (s.init == ParamSpec::Init::kGlorotUniform) {
        GlorotUniform(m.params.data() + info.offset, info.count, s.fan_in, s.fan_out, seed, index);
      }
      p.push_back(m.params.data() + info.offset);
      g.push_back(m.grads.data() + info.offset);
      ++index;
    }
    m.layers[l]->BindParams(p, g);
    m.need_din.push_back(params_before);
    params_before = params_before || !specs[l].empty();
  }
  return model;
}

const std::vector<int>& Model::input_shape() const { return impl_->input_shape; }
size_t Model::input_size() const { return impl_->input_size; }
int Model::num_classes() const { return impl_->layers.back()->output_shape()[0]; }
float* Model::params() { return impl_->params.data(); }
const float* Model::params() const { return impl_->params.data(); }
float* Model::grads() { return impl_->grads.data(); }
size_t Model::num_params() const { return impl_->params.size(); }
const std::vector<ParamInfo>& Model::param_infos() const { return impl_->infos; }

const float* Model::Forward(const float* input, int batch, bool training) {
  Impl& m = *impl_;
  m.ready_for_backward = false;
  if (batch <= 0) return m.empty_logits;
  const float* x = input;
  if (training) {
    float* copy = EnsureSize(m.input_copy, static_cast<size_t>(batch) * m.input_size);
    std::memcpy(copy, input, static_cast<size_t>(batch) * m.input_size * sizeof(float));
    x = copy;
  }
  for (const auto& layer : m.layers) x = layer->Forward(x, batch, training);
  m.ready_for_backward = training;
  return x;
}

void Model::Backward(const float* grad_logits) { Backward(grad_logits, nullptr); }

void Model::Backward(const float* grad_logits, const std::function<void(size_t)>& on_ready) {
  Impl& m = *impl_;
  if (!m.ready_for_backward) {
    // A caller bug (Backward without a training Forward, or after an evaluation
    // Forward reused the buffers): zero gradients are safer than stale ones.
    RT_LOG(ERROR) << "nn::Model::Backward called without a preceding training Forward; gradients set to zero";
    std::fill(m.grads.begin(), m.grads.end(), 0.0f);
    return;
  }
  const float* d = grad_logits;
  for (size_t i = m.layers.size(); i-- > 0;) {
    d = m.layers[i]->Backward(d, m.need_din[i]);
    // Layers run back to front, so every gradient from this layer's first one on is final.
    const size_t params_end = i + 1 < m.layers.size() ? m.first_param[i + 1] : m.grads.size();
    if (on_ready && params_end > m.first_param[i]) on_ready(m.first_param[i]);
    if (!m.need_din[i]) break;  // nothing before layer i has parameters
  }
  if (on_ready) on_ready(0);
}

std::vector<LayerDesc> Model::layers() const {
  const Impl& m = *impl_;
  std::vector<LayerDesc> out;
  size_t index = 0;  // into infos, in layer order
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const Layer& layer = *m.layers[l];
    LayerDesc d = layer.Describe();
    d.name = layer.name();
    d.input_shape = layer.input_shape();
    d.output_shape = layer.output_shape();
    d.need_input_grad = m.need_din[l];
    const size_t nparams = layer.ParamSpecs().size();
    if (nparams >= 1) d.kernel_offset = m.infos[index].offset;
    if (nparams >= 2) d.bias_offset = m.infos[index + 1].offset;
    index += nparams;
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
  size_t name_w = 29;
  for (const auto& layer : m.layers) {
    name_w = std::max(name_w, layer->name().size() + std::strlen(layer->class_name()) + 5);
  }
  const size_t shape_w = 26, total_w = name_w + shape_w + 10;
  std::string out = "Model: \"sequential\"\n" + std::string(total_w, '_') + "\n";
  out += Pad(" Layer (type)", name_w) + Pad("Output Shape", shape_w) + "Param #\n";
  out += std::string(total_w, '=') + "\n";
  size_t index = 0;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const Layer& layer = *m.layers[l];
    uint64_t count = 0;
    for (size_t n = layer.ParamSpecs().size(); n > 0; --n) count += m.infos[index++].count;
    out += Pad(" " + layer.name() + " (" + layer.class_name() + ")", name_w) +
           Pad(ShapeWithBatch(layer.output_shape()), shape_w) + WithCommas(count) + "\n";
    out += std::string(total_w, l + 1 == m.layers.size() ? '=' : '_') + "\n";
  }
  out += "Total params: " + WithCommas(m.params.size()) + "\n";
  out += "Trainable params: " + WithCommas(m.params.size()) + "\n";
  out += "Non-trainable params: 0\n" + std::string(total_w, '_') + "\n";
  return out;
}

}  // namespace ringtrain::nn
