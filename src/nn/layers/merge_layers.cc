#include "nn/layers/merge_layers.h"

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

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateElementwise(Op op, const char* cls, const nlohmann::json& j,
                                                               std::string name, const std::vector<Shape>& in,
                                                               const std::string& ctx) {
  RT_RETURN_IF_ERROR(CheckKnownFields(j, {"type", "name"}, ctx));
  if (op == Op::kSubtract && in.size() != 2) {
    return InvalidArgumentError(ctx + ": Subtract takes exactly two inputs (x0 - x1); list two in 'inputs' (it has " +
                                std::to_string(in.size()) + ")");
  }
  RT_RETURN_IF_ERROR(NeedTwo(in, cls, ctx));
  RT_RETURN_IF_ERROR(SameShapes(in, cls, ctx));
  return std::unique_ptr<Layer>(new MergeLayer(op, std::move(name), in, in[0], 0));
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateSubtract(const nlohmann::json& j, std::string name,
                                                            const std::vector<Shape>& in, const std::string& ctx) {
  return CreateElementwise(Op::kSubtract, "Subtract", j, std::move(name), in, ctx);
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateAverage(const nlohmann::json& j, std::string name,
                                                           const std::vector<Shape>& in, const std::string& ctx) {
  return CreateElementwise(Op::kAverage, "Average", j, std::move(name), in, ctx);
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateMaximum(const nlohmann::json& j, std::string name,
                                                           const std::vector<Shape>& in, const std::string& ctx) {
  return CreateElementwise(Op::kMaximum, "Maximum", j, std::move(name), in, ctx);
}

StatusOr<std::unique_ptr<Layer>> MergeLayer::CreateMinimum(const nlohmann::json& j, std::string name,
                                                           const std::vector<Shape>& in, const std::string& ctx) {
  return CreateElementwise(Op::kMinimum, "Minimum", j, std::move(name), in, ctx);
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
    : Layer(std::move(name), in, std::move(out)), op_(op), axis_(axis) {}

const char* MergeLayer::type() const {
  switch (op_) {
    case Op::kAdd: return "add";
    case Op::kMultiply: return "multiply";
    case Op::kConcatenate: return "concatenate";
    case Op::kSubtract: return "subtract";
    case Op::kAverage: return "average";
    case Op::kMaximum: return "maximum";
    case Op::kMinimum: return "minimum";
  }
  return "?";
}

const char* MergeLayer::class_name() const {
  switch (op_) {
    case Op::kAdd: return "Add";
    case Op::kMultiply: return "Multiply";
    case Op::kConcatenate: return "Concatenate";
    case Op::kSubtract: return "Subtract";
    case Op::kAverage: return "Average";
    case Op::kMaximum: return "Maximum";
    case Op::kMinimum: return "Minimum";
  }
  return "?";
}

ops::Op MergeLayer::op() const {
  ops::Op op;
  switch (op_) {
    case Op::kAdd: op.kind = ops::OpKind::kAdd; break;
    case Op::kMultiply: op.kind = ops::OpKind::kMultiply; break;
    case Op::kConcatenate: op.kind = ops::OpKind::kConcatenate; break;
    case Op::kSubtract: op.kind = ops::OpKind::kSubtract; break;
    case Op::kAverage: op.kind = ops::OpKind::kAverage; break;
    case Op::kMaximum: op.kind = ops::OpKind::kMaximum; break;
    case Op::kMinimum: op.kind = ops::OpKind::kMinimum; break;
  }
  op.num_inputs = num_inputs();
  op.axis = axis_;
  return op;
}

}  // namespace ringtrain::nn
