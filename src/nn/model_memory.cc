#include "nn/model_memory.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "common/memory_bound.h"
#include "nn/layer.h"
#include "nn/model_build.h"

namespace ringtrain::nn {
namespace {

uint64_t U(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

uint64_t Product(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n = SatMul(n, U(d));
  return n;
}

// The kernels' scratch needs per example (kernels/conv_common.cc), from the window.
uint64_t PaddedInput(const ops::Window& g) {
  const uint64_t ph = U(int64_t{g.out_h - 1} * g.stride_h + g.kh), pw = U(int64_t{g.out_w - 1} * g.stride_w + g.kw);
  const bool pads = g.pad_top != 0 || g.pad_left != 0 || ph > U(g.h) || pw > U(g.w);
  return pads ? SatMul(SatMul(ph, pw), U(g.c)) : 0;
}

// Which cost model an op's CPU kernel follows: the dense and convolution kernels with
// relu or no activation fused, and views, are modelled here; for every other op the CPU
// backend reports its kernel's scratch (backends::CpuScratchFloatsPerExample).
enum class Cost { kView, kDense, kConv2D, kLayer };

Cost CostModel(const ops::Op& op) {
  const bool fused = op.activation == ops::Activation::kLinear || op.activation == ops::Activation::kRelu;
  switch (op.kind) {
    case ops::OpKind::kView:
      return Cost::kView;
    case ops::OpKind::kDense:
      return fused ? Cost::kDense : Cost::kLayer;
    case ops::OpKind::kConv2D:
      return fused && op.groups == 1 && op.window.dilation_h == 1 && op.window.dilation_w == 1 ? Cost::kConv2D
                                                                                                : Cost::kLayer;
    default:
      return Cost::kLayer;
  }
}

// The floats per example the CPU kernel of `layer` (whose op is `op`) keeps besides its
// output and input gradients.
uint64_t ScratchFloats(const Layer& layer, const ops::Op& op, bool training) {
  ops::Node node;
  node.op = op;
  node.input_shapes = layer.input_shapes();
  node.output_shape = layer.output_shape();
  return backends::CpuScratchFloatsPerExample(node, training);
}

}  // namespace

StatusOr<ModelFootprint> ModelFootprint::FromJson(const nlohmann::json& model_json) {
  internal::LayerGraph graph;
  RT_RETURN_IF_ERROR(internal::BuildLayerGraph(model_json, &graph));
  const auto& layers = graph.layers;
  const std::vector<bool> up = graph.TrainableUpstream();
  ModelFootprint f;
  f.input_size_ = U(NumElements(graph.input_shape));
  f.output_size_ = U(layers.back()->output_size());
  const int last_axis = layers.back()->output_shape().back();
  f.output_positions_ = last_axis > 0 ? f.output_size_ / U(last_axis) : 1;
  uint64_t largest = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = *layers[i];
    uint64_t params = 0;  // a call of a shared layer has none of its own
    if (graph.shares[i] < 0) {
      for (const ParamSpec& s : l.ParamSpecs()) params = SatAdd(params, Product(s.shape));
    }
    f.num_params_ = SatAdd(f.num_params_, params);
    if (params > largest) {
      largest = params;
      f.largest_layer_ = "model.layers[" + std::to_string(i) + "] (" + l.name() + ")";
    }
    const ops::Op op = l.op();
    bool need_din = false;  // a layer feeding this one has trainable weights: it passes a gradient back
    for (int k : graph.inputs[i]) need_din = need_din || (k != internal::kModelInput && up[static_cast<size_t>(k)]);
    LayerCost c;
    c.name = "model.layers[" + std::to_string(i) + "] (" + l.name() + ")";
    const uint64_t in = U(l.input_size()), out = U(l.output_size());
    switch (CostModel(op)) {
      case Cost::kView:
        break;  // the same buffer under another shape
      case Cost::kDense:
        c.forward = out;
        c.backward = SatAdd(op.activation == ops::Activation::kRelu ? out : 0, need_din ? in : 0);
        c.dense = need_din;
        c.dense_units = U(op.units);
        break;
      case Cost::kConv2D: {
        const ops::Window& g = op.window;
        const uint64_t positions = SatMul(U(g.out_h), U(g.out_w));
        const uint64_t taps = SatMul(SatMul(U(g.kh), U(g.kw)), U(g.c));
        const uint64_t cols = SatMul(positions, taps);
        const uint64_t padded = PaddedInput(g);
        c.forward = out;
        c.backward = need_din ? SatAdd(out, in) : 0;  // dpre and the input gradient
        c.scratch_fwd = std::max(cols, padded);
        const uint64_t filter_grad =
            std::max(SatAdd(SatAdd(padded, out), SatMul(SatAdd(taps, 1), U(op.units))), SatAdd(cols, out));
        // The input gradient: im2col columns, or (AVX-512, stride 1) the zero-padded output
        // gradient and the flipped kernel of the transposed convolution.
        const uint64_t transposed =
            g.stride_h == 1 && g.stride_w == 1
                ? SatAdd(SatMul(SatMul(U(int64_t{g.out_h} + g.kh - 1), U(int64_t{g.out_w} + g.kw - 1)), U(op.units)),
                         SatMul(taps, U(op.units)))
                : 0;
        c.scratch_bwd = std::max(filter_grad, need_din ? std::max(cols, transposed) : 0);
        c.rows_per_example = positions;
        break;
      }
      case Cost::kLayer:
        // The output, an input gradient per input, and what the kernel keeps.
        c.forward = out;
        c.backward = need_din ? SatMul(in, U(l.num_inputs())) : 0;
        c.scratch_fwd = ScratchFloats(l, op, false);
        c.scratch_bwd = ScratchFloats(l, op, true);
        break;
    }
    // A layer whose output feeds several layers sums their gradients in a buffer of its own.
    if (graph.consumers[i] > 1 && up[i]) c.backward = SatAdd(c.backward, out);
    f.layers_.push_back(std::move(c));
  }
  if (f.num_params_ > internal::kMaxParams) {
    return InvalidArgumentError("model: " + std::to_string(f.num_params_) + " parameters" +
                                (f.num_params_ == kSaturated ? " or more" : "") + " (" + f.largest_layer_ +
                                " holds the most); the limit is 2^31 - 1: make the model smaller");
  }
  return f;
}

uint64_t ModelFootprint::ActivationBytes(uint64_t batch, bool training) const {
  uint64_t floats = training ? SatMul(batch, input_size_) : 0;  // the model's copy of a training input
  for (const LayerCost& c : layers_) {
    floats = SatAdd(floats, SatMul(batch, c.forward));
    // Each layer keeps its own scratch buffer, grown to the largest pass it ran.
    floats = SatAdd(floats, SatMul(batch, training ? std::max(c.scratch_fwd, c.scratch_bwd) : c.scratch_fwd));
    if (!training) continue;
    floats = SatAdd(floats, SatMul(batch, c.backward));
    if (c.dense) floats = SatAdd(floats, SatMul(SatAdd(batch, 15) / 16 * 16, c.dense_units));
  }
  return SatMul(floats, sizeof(float));
}

Status ModelFootprint::CheckBatch(uint64_t batch, const std::string& batch_field) const {
  constexpr uint64_t kMaxRows = static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
  for (const LayerCost& c : layers_) {
    if (c.rows_per_example == 0) continue;
    if (SatMul(batch, c.rows_per_example) > kMaxRows) {
      return InvalidArgumentError(batch_field + " " + std::to_string(batch) + " x " +
                                  std::to_string(c.rows_per_example) + " output positions of " + c.name +
                                  " exceeds the 2^31 - 1 rows a convolution can process at once; lower " +
                                  batch_field + " to at most " + std::to_string(kMaxRows / c.rows_per_example))
          .About(Subject::kConfig);
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn
