#include "nn/layers/merge_layers.h"

#include <algorithm>

#include "kernels/elementwise.h"
#include "nn/keras/json_fields.h"

namespace ringtrain::nn {
namespace {

Status NeedTwo(const std::vector<Shape>& in, const char* cls, const std::string& ctx) {
  if (in.size() < 2) {
    return InvalidArgumentError(ctx + ": " + cls + " merges two or more inputs; list them in 'inputs' (it has " +
                                std::to_string(in.size()) + ")");
  }
  return Status::Ok();
}

Status SameShapes(const std::vector<Shape>& in, const char* cls, const std::string& ctx) {
  for (size_t k = 1; k < in.size(); ++k) {
    if (in[k] != in[0]) {
      return InvalidArgumentError(ctx + ": " + cls + " needs inputs of the same shape, but input 0 is " +
                                  ShapeWithBatch(in[0]) + " and input " + std::to_string(k) + " is " +
                                  ShapeWithBatch(in[k]) + " (broadcasting is not supported)");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateAdd(const nlohmann::json& j, std::string name,
                                                       const std::vector<Shape>& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name"}, ctx));
  RT_RETURN_IF_ERROR(NeedTwo(in, "Add", ctx));
  RT_RETURN_IF_ERROR(SameShapes(in, "Add", ctx));
  return std::unique_ptr<Layer>(new MergeLayer(Op::kAdd, std::move(name), in, in[0], 0));
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateMultiply(const nlohmann::json& j, std::string name,
                                                            const std::vector<Shape>& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name"}, ctx));
  RT_RETURN_IF_ERROR(NeedTwo(in, "Multiply", ctx));
  RT_RETURN_IF_ERROR(SameShapes(in, "Multiply", ctx));
  return std::unique_ptr<Layer>(new MergeLayer(Op::kMultiply, std::move(name), in, in[0], 0));
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateConcatenate(const nlohmann::json& j, std::string name,
                                                               const std::vector<Shape>& in, const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name", "axis"}, ctx));
  RT_RETURN_IF_ERROR(NeedTwo(in, "Concatenate", ctx));
  const int rank = static_cast<int>(in[0].size());
  int axis = rank - 1;
  if (auto a = j.find("axis"); a != j.end()) {
    // Keras numbers the axes with the batch first: 1..rank, or -rank..-1.
    const bool ok = a->is_number_integer() && a->get<int64_t>() != 0 && a->get<int64_t>() >= -rank &&
                    a->get<int64_t>() <= rank;
    if (!ok) {
      return InvalidArgumentError(ctx + ": 'axis' must be an axis of the inputs other than the batch (1 to " +
                                  std::to_string(rank) + ", or -" + std::to_string(rank) + " to -1), got " +
                                  BriefDump(*a));
    }
    const int64_t v = a->get<int64_t>();
    axis = static_cast<int>(v < 0 ? rank + v : v - 1);
  }
  Shape out = in[0];
  for (size_t k = 1; k < in.size(); ++k) {
    bool ok = static_cast<int>(in[k].size()) == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == axis || in[k][d] == in[0][d];
    if (!ok) {
      return InvalidArgumentError(ctx + ": Concatenate needs inputs whose shapes agree except along the axis, but "
                                  "input 0 is " + ShapeWithBatch(in[0]) + " and input " + std::to_string(k) + " is " +
                                  ShapeWithBatch(in[k]));
    }
    out[axis] += in[k][axis];
  }
  return std::unique_ptr<Layer>(new MergeLayer(Op::kConcatenate, std::move(name), in, std::move(out), axis));
}

MergeLayer::MergeLayer(Op op, std::string name, const std::vector<Shape>& in, Shape out, int axis)
    : Layer(std::move(name), in, std::move(out)), op_(op), axis_(axis), din_(in.size()) {
  if (op_ != Op::kConcatenate) return;
  for (int d = 0; d < axis_; ++d) outer_ *= static_cast<size_t>(in[0][d]);
  for (const Shape& s : in) {
    size_t chunk = 1;
    for (size_t d = static_cast<size_t>(axis_); d < s.size(); ++d) chunk *= static_cast<size_t>(s[d]);
    chunks_.push_back(chunk);
  }
}

const char* MergeLayer::type() const {
  switch (op_) {
    case Op::kAdd: return "add";
    case Op::kMultiply: return "multiply";
    case Op::kConcatenate: return "concatenate";
  }
  return "?";
}

const char* MergeLayer::class_name() const {
  switch (op_) {
    case Op::kAdd: return "Add";
    case Op::kMultiply: return "Multiply";
    case Op::kConcatenate: return "Concatenate";
  }
  return "?";
}

ops::Op MergeLayer::op() const {
  ops::Op op;
  op.kind = op_ == Op::kAdd ? ops::OpKind::kAdd : op_ == Op::kMultiply ? ops::OpKind::kMultiply : ops::OpKind::kConcatenate;
  op.num_inputs = num_inputs();
  op.axis = axis_;
  return op;
}

const float* MergeLayer::Forward(const float* in, int batch, bool training) {
  return ForwardInputs({in}, batch, training);  // not reached: two inputs or more
}

const float* MergeLayer::Backward(const float* dout, bool need_din) { return nullptr; }

const float* MergeLayer::ForwardInputs(const std::vector<const float*>& in, int batch, bool training) {
  const size_t n = static_cast<size_t>(batch) * output_size();
  float* out = EnsureSize(out_, n);
  switch (op_) {
    case Op::kAdd: {
      // Two inputs at least (checked when built); a fused relu after the last sum.
      if (producer_ != nullptr) {  // two inputs, one computed here (IEEE addition commutes: the same bits)
        producer_->AddOutputTo(in[1 - deferred_input_], fused_relu_, out);
        break;
      }
      const size_t last = in.size() - 1;
      kernels::AddArrays(in[0], in[1], n, fused_relu_ && last == 1, out);
      for (size_t k = 2; k <= last; ++k) kernels::AddArrays(out, in[k], n, fused_relu_ && k == last, out);
      break;
    }
    case Op::kMultiply:
      std::copy(in[0], in[0] + n, out);
      for (size_t k = 1; k < in.size(); ++k) {
        const float* x = in[k];
        for (size_t i = 0; i < n; ++i) out[i] *= x[i];
      }
      break;
    case Op::kConcatenate: {
      const size_t rows = static_cast<size_t>(batch) * outer_;
      float* y = out;
      for (size_t r = 0; r < rows; ++r) {
        for (size_t k = 0; k < in.size(); ++k) {
          const float* x = in[k] + r * chunks_[k];
          y = std::copy(x, x + chunks_[k], y);
        }
      }
      break;
    }
  }
  if (training) {
    x_.assign(in.begin(), in.end());  // no allocation once sized: the input count is fixed
    batch_ = batch;
  }
  return out;
}

void MergeLayer::BackwardInputs(const float* dout, const std::vector<bool>& need_din, std::vector<const float*>* din) {
  const size_t n = static_cast<size_t>(batch_) * output_size();
  const size_t inputs = x_.size();
  for (size_t k = 0; k < inputs; ++k) (*din)[k] = nullptr;
  if (op_ == Op::kConcatenate) {
    const size_t rows = static_cast<size_t>(batch_) * outer_;
    for (size_t k = 0; k < inputs; ++k) {
      if (need_din[k]) (*din)[k] = EnsureSize(din_[k], rows * chunks_[k]);
    }
    const float* d = dout;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t k = 0; k < inputs; ++k) {
        if (need_din[k]) std::copy(d, d + chunks_[k], din_[k].data() + r * chunks_[k]);
        d += chunks_[k];
      }
    }
    return;
  }
  if (op_ == Op::kAdd) {
    // d(x0 + x1 + ...)/dxk = 1: every input gets the output gradient, masked by the
    // fused relu when there is one (computed once, shared by the inputs).
    const float* g = dout;
    const bool mask = fused_relu_ && !masked_;
    masked_ = false;
    if (mask) {
      float* masked = EnsureSize(din_[0], n);
      kernels::ReluMask(dout, out_.data(), n, masked);
      g = masked;
    }
    for (size_t k = 0; k < inputs; ++k) (*din)[k] = need_din[k] ? g : nullptr;
    return;
  }
  for (size_t k = 0; k < inputs; ++k) {
    if (!need_din[k]) continue;
    float* g = EnsureSize(din_[k], n);
    std::copy(dout, dout + n, g);
    // Multiply: d(x0 * x1 * ...)/dxk is the product of the others, in input order.
    for (size_t j = 0; j < inputs; ++j) {
      if (j == k) continue;
      const float* x = x_[j];
      for (size_t i = 0; i < n; ++i) g[i] *= x[i];
    }
    (*din)[k] = g;
  }
}

}  // namespace ringtrain::nn
