#include "nn/keras/keras_json_tfop.h"

#include <cctype>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"

namespace ringtrain::nn::keras_json {
namespace {

using nlohmann::json;

// tf_keras/engine/node.py's marker of a constant in the first argument.
constexpr const char* kTfKerasConstant = "_CONSTANT_VALUE";

// One element of the first argument: a tensor, or a constant.
struct Operand {
  bool constant = false;
  TensorRef ref;
  json value;  // the constant
};

bool IsRef(const json& v) {
  return v.is_array() && v.size() == 3 && v[0].is_string() && JsonInt(v[1], 0, 1 << 20) && JsonInt(v[2], 0, 1 << 20);
}

TensorRef ToRef(const json& v) {
  return TensorRef{v[0].get<std::string>(), *JsonInt(v[1], 0, 1 << 20), *JsonInt(v[2], 0, 1 << 20)};
}

// A record of the first argument: [layer, node, tensor, kwargs?] or
// ["_CONSTANT_VALUE", -1, value, kwargs?].
bool IsRecord(const json& v) {
  if (!v.is_array() || (v.size() != 3 && v.size() != 4) || !v[0].is_string()) return false;
  if (v.size() == 4 && !v[3].is_object()) return false;
  return v[0] == kTfKerasConstant || IsRef(json::array({v[0], v[1], v[2]}));
}

// An elementwise op with one tensor operand and one scalar constant, as the Rescaling layer
// that computes it (x * scale + offset): x + c, c + x, x - c, c - x, x * c, c * x exactly
// (a scale of 1 or an offset of 0 adds no rounding), x / c as x * (1 / c), within a
// rounding of Keras' quotient. kind: "add", "subtract", "multiply", "divide".
// `constant_first`: the constant is the first operand. An error message otherwise.
StatusOr<json> ScalarRescaling(const std::string& kind, const json& constant, bool constant_first,
                               const std::string& op) {
  const std::optional<double> c = JsonNumber(constant);
  if (!c) {
    return InvalidArgumentError(op + " is called with the constant " + JsonBrief(constant) +
                                "; ringtrain maps an op with a constant only when it is one number");
  }
  double scale = 1, offset = 0;
  if (kind == "add") {
    offset = *c;
  } else if (kind == "subtract") {
    scale = constant_first ? -1 : 1;
    offset = constant_first ? *c : -*c;
  } else if (kind == "multiply") {
    scale = *c;
  } else if (kind == "divide" && !constant_first && *c != 0) {
    scale = 1.0 / *c;
  } else {
    return InvalidArgumentError(op + " with the constant " + JsonBrief(constant) +
                                (kind == "divide" ? (constant_first ? " divided by a tensor" : " as divisor")
                                                  : std::string(" as an operand")) +
                                " has no ringtrain layer; write it with Keras layers and save the model again");
  }
  return json{{"type", "Rescaling"}, {"scale", scale}, {"offset", offset}};
}

// Whether `axis` names the height and width of an NHWC tensor: [1, 2] or [-3, -2].
bool IsSpatialAxes(const json& axis) {
  if (!axis.is_array() || axis.size() != 2) return false;
  const std::optional<int64_t> a = JsonInt(axis[0], -4, 3), b = JsonInt(axis[1], -4, 3);
  return a && b && ((*a == 1 && *b == 2) || (*a == -3 && *b == -2));
}

// tf.math.reduce_sum / reduce_mean, keras.ops.sum / mean over `axis` (the batch being axis
// 0) as a layer: GlobalAveragePooling2D for a mean over the height and width (its bits),
// else the "reduce" layer (nn/layers/reduce.h).
StatusOr<json> ReductionLayer(const Entry& e, const std::string& op, bool mean, const json& axis, const json& keepdims) {
  if (!keepdims.is_boolean()) return e.Error(op + " keepdims must be true or false, got " + JsonBrief(keepdims));
  if (axis.is_null()) {
    return e.Error(op + " over every axis (axis=None) reduces the batch too, which no ringtrain layer does; name the "
                   "axes, e.g. axis=[1, 2]");
  }
  const json list = axis.is_array() ? axis : json::array({axis});
  for (const json& a : list) {
    if (!JsonInt(a, -64, 64) || *JsonInt(a, -64, 64) == 0) {
      return e.Error(op + " over axis=" + JsonBrief(axis) + ": ringtrain reduces axes other than the batch (1, 2, "
                     "... or -1, -2, ...)");
    }
  }
  if (list.empty()) return e.Error(op + " over axis=[] reduces nothing; leave it out of the model");
  if (mean && IsSpatialAxes(axis)) return json{{"type", "GlobalAveragePooling2D"}, {"keepdims", keepdims.get<bool>()}};
  return json{{"type", "reduce"}, {"op", mean ? "mean" : "sum"}, {"axis", list}, {"keepdims", keepdims.get<bool>()}};
}

// "math.add" -> "add", ...: the elementwise ops ScalarRescaling takes; "" for the others.
std::string ScalarKind(const std::string& function) {
  if (function == "math.add" || function == "__operators__.add") return "add";
  if (function == "math.subtract" || function == "__operators__.sub") return "subtract";
  if (function == "math.multiply") return "multiply";
  if (function == "math.truediv" || function == "math.divide" || function == "__operators__.truediv") return "divide";
  return "";
}

class OpCall {
 public:
  explicit OpCall(const Entry& e) : e_(e) {}

  // Reads the one inbound node: the first argument and the keyword arguments.
  Status Read() {
    if (!e_.config->is_object() || !e_.config->value("function", json()).is_string()) {
      return e_.Error("has no 'function' (the TensorFlow op it calls)");
    }
    function_ = (*e_.config)["function"].get<std::string>();
    op_ = "tf." + function_;
    if (!e_.inbound || !e_.inbound->is_array() || e_.inbound->empty()) {
      return e_.Error("has no inbound node: it is not called on anything");
    }
    if (e_.inbound->size() > 1) {
      return e_.Error("is called " + std::to_string(e_.inbound->size()) +
                      " times (a shared layer); ringtrain needs each layer called once");
    }
    const json& node = (*e_.inbound)[0];
    std::vector<const json*> records;
    if (IsRecord(node)) {  // the first argument is one tensor (or constant)
      records.push_back(&node);
    } else if (node.is_array() && !node.empty()) {  // a list of them
      list_ = true;
      for (const json& r : node) {
        if (!IsRecord(r)) return BadNode(node);
        records.push_back(&r);
      }
    } else {
      return BadNode(node);
    }
    for (const json* r : records) {
      Operand o;
      if ((*r)[0] == kTfKerasConstant) {
        o.constant = true;
        o.value = (*r)[2];
      } else {
        o.ref = ToRef(*r);
      }
      first_.push_back(std::move(o));
    }
    // tf.keras 2 attaches the same kwargs to every record of the first argument.
    const json& last = *records.back();
    if (last.size() == 4) kwargs_ = last[3];
    for (auto& [k, v] : kwargs_.items()) {
      if (k == "name" && (v.is_null() || v.is_string())) continue;  // the op's name in the TF graph
      if (!known_.count(k)) known_[k] = &v;
    }
    return Status::Ok();
  }

  StatusOr<OpLayer> Translate() {
    if (const std::string kind = ScalarKind(function_); !kind.empty() && HasScalarOperand()) return Scalar(kind);
    if (function_ == "math.add" || function_ == "__operators__.add") return Binary("Add");
    if (function_ == "math.multiply") return Binary("Multiply");
    if (function_ == "math.subtract" || function_ == "__operators__.sub") return Binary("Subtract");
    if (function_ == "math.maximum") return Binary("Maximum");
    if (function_ == "math.minimum") return Binary("Minimum");
    if (function_ == "concat") return Concat();
    if (function_ == "reshape") return Reshape();
    if (function_ == "math.reduce_mean") return Reduction(true);
    if (function_ == "math.reduce_sum") return Reduction(false);
    if (ScalarKind(function_) == "divide") {
      return e_.Error(op_ + " of two tensors has no ringtrain layer (a division by a number maps to Rescaling): "
                      "write it with Keras layers and save the model again");
    }
    return e_.Error(op_ + " has no ringtrain layer (TensorFlow ops map for add, subtract, multiply and divide by a "
                    "number, add, subtract, multiply, maximum and minimum of tensors, concat, reshape, and "
                    "reduce_sum and reduce_mean over axes other than the batch): write it with Keras layers and save "
                    "the model again");
  }

 private:
  const Entry& e_;
  std::string function_, op_;
  bool list_ = false;
  std::vector<Operand> first_;
  json kwargs_ = json::object();
  std::map<std::string, const json*> known_;  // kwargs other than name

  Status BadNode(const json& node) const {
    return e_.Error("inbound node " + JsonBrief(node) +
                    " is not tf.keras 2's [layer, node_index, tensor_index, kwargs] (or a list of them)");
  }

  // The operand `o` as a graph tensor, else the refusal naming the constant.
  StatusOr<TensorRef> Tensor(const Operand& o, const std::string& arg) const {
    if (!o.constant) return o.ref;
    return ConstantRefusal(o.value, arg);
  }

  Status ConstantRefusal(const json& value, const std::string& arg) const {
    std::string hint;
    if (function_ == "math.multiply" || function_ == "math.add" || function_ == "__operators__.add") {
      hint = " (for a constant factor or offset use Rescaling(scale, offset))";
    }
    return e_.Error(op_ + " is called with the constant " + JsonBrief(value) + " as '" + arg +
                    "'; ringtrain maps an op layer only when every operand is a tensor of the model" + hint);
  }

  // Every kwarg but `allowed` refused, naming it.
  Status OnlyKwargs(std::initializer_list<const char*> allowed) const {
    for (auto& [k, v] : known_) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) return e_.Error(op_ + " is called with " + k + "=" + JsonBrief(*v) + ", which ringtrain does not map");
    }
    return Status::Ok();
  }

  // One operand is a number: x op c, or c op x.
  bool HasScalarOperand() const {
    if (first_.size() != 1) return false;
    const auto y = known_.find("y");
    return first_[0].constant || (y != known_.end() && !IsRef(*y->second));
  }

  StatusOr<OpLayer> Scalar(const std::string& kind) {
    RT_RETURN_IF_ERROR(OnlyKwargs({"y"}));
    const auto y = known_.find("y");
    if (y == known_.end()) return e_.Error(op_ + " has no second operand 'y'");
    const bool constant_first = first_[0].constant;
    if (constant_first && !IsRef(*y->second)) return e_.Error(op_ + " is called on two constants");
    OpLayer out;
    out.inputs = {constant_first ? ToRef(*y->second) : first_[0].ref};
    auto layer = ScalarRescaling(kind, constant_first ? first_[0].value : *y->second, constant_first, op_);
    if (!layer.ok()) return e_.Error(layer.status().message());
    out.layer = *layer;
    return out;
  }

  // tf.math.reduce_sum / reduce_mean over axes other than the batch (ReductionLayer).
  StatusOr<OpLayer> Reduction(bool mean) {
    if (first_.size() != 1) return e_.Error(op_ + " takes one tensor as its first argument 'input_tensor'");
    RT_RETURN_IF_ERROR(OnlyKwargs({"axis", "keepdims"}));
    RT_ASSIGN_OR_RETURN(TensorRef x, Tensor(first_[0], "input_tensor"));
    const auto axis = known_.find("axis");
    const auto keepdims = known_.find("keepdims");
    OpLayer out;
    out.inputs = {x};
    RT_ASSIGN_OR_RETURN(out.layer, ReductionLayer(e_, op_, mean, axis == known_.end() ? json() : *axis->second,
                                                  keepdims == known_.end() ? json(false) : *keepdims->second));
    return out;
  }

  StatusOr<OpLayer> Binary(const char* type) {
    if (first_.size() != 1) return e_.Error(op_ + " takes one tensor as its first argument 'x'");
    RT_RETURN_IF_ERROR(OnlyKwargs({"y"}));
    OpLayer out;
    RT_ASSIGN_OR_RETURN(TensorRef x, Tensor(first_[0], "x"));
    const auto y = known_.find("y");
    if (y == known_.end()) return e_.Error(op_ + " has no second operand 'y'");
    if (!IsRef(*y->second)) return ConstantRefusal(*y->second, "y");
    out.inputs = {x, ToRef(*y->second)};
    out.layer = {{"type", type}};
    return out;
  }

  StatusOr<OpLayer> Concat() {
    if (!list_) return e_.Error(op_ + " takes a list of tensors as its first argument 'values'");
    RT_RETURN_IF_ERROR(OnlyKwargs({"axis"}));
    OpLayer out;
    for (const Operand& o : first_) {
      RT_ASSIGN_OR_RETURN(TensorRef r, Tensor(o, "values"));
      out.inputs.push_back(std::move(r));
    }
    const auto axis = known_.find("axis");
    if (axis == known_.end() || !JsonInt(*axis->second, -64, 64)) {
      return e_.Error(op_ + " needs an integer 'axis', got " +
                      (axis == known_.end() ? std::string("none") : JsonBrief(*axis->second)));
    }
    out.layer = {{"type", "Concatenate"}, {"axis", *JsonInt(*axis->second, -64, 64)}};
    return out;
  }

  StatusOr<OpLayer> Reshape() {
    if (first_.size() != 1) return e_.Error(op_ + " takes one tensor as its first argument 'tensor'");
    RT_RETURN_IF_ERROR(OnlyKwargs({"shape"}));
    OpLayer out;
    RT_ASSIGN_OR_RETURN(TensorRef x, Tensor(first_[0], "tensor"));
    out.inputs = {x};
    const auto shape = known_.find("shape");
    if (shape == known_.end()) return e_.Error(op_ + " has no 'shape'");
    const json& s = *shape->second;
    if (IsRef(s)) return e_.Error(op_ + " takes its shape from the tensor '" + s[0].get<std::string>() +
                                  "'; ringtrain maps a reshape to a constant shape only");
    if (!s.is_array() || s.size() < 2) {
      return e_.Error(op_ + " reshapes to " + JsonBrief(s) + "; ringtrain maps a shape [-1, d1, ...] (Reshape)");
    }
    if (s[0] != -1) {
      return e_.Error(op_ + " reshapes to " + JsonBrief(s) + ", whose batch entry is not -1; ringtrain maps a shape "
                      "[-1, d1, ...] (the batch kept), as Reshape(target_shape) does");
    }
    out.layer = {{"type", "Reshape"}, {"target_shape", json(s.begin() + 1, s.end())}};
    return out;
  }
};

// A Keras 3 operation's call argument: a __keras_tensor__ (its keras_history), else a constant.
bool KerasTensorRef(const json& v, TensorRef* out) {
  if (!v.is_object() || v.value("class_name", json()) != "__keras_tensor__") return false;
  const json c = v.value("config", json());
  if (!c.is_object() || !IsRef(c.value("keras_history", json()))) return false;
  *out = ToRef(c["keras_history"]);
  return true;
}

// keras.src.ops.numpy.Add -> "keras.ops.add" (how users call it).
std::string Keras3OpName(const std::string& cls) {
  std::string snake;
  for (size_t i = 0; i < cls.size(); ++i) {
    const char ch = cls[i];
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (i > 0) snake += '_';
      snake += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      snake += ch;
    }
  }
  return "keras.ops." + snake;
}

class Keras3Call {
 public:
  explicit Keras3Call(const Entry& e) : e_(e), op_(Keras3OpName(e.cls)) {}

  StatusOr<OpLayer> Translate() {
    RT_RETURN_IF_ERROR(Read());
    if (const std::string kind = Keras3ScalarKind(); !kind.empty() && args_.size() == 2) {
      TensorRef r;
      const bool t0 = KerasTensorRef(args_[0], &r), t1 = KerasTensorRef(args_[1], &r);
      if (t0 != t1) {  // one tensor, one constant
        RT_RETURN_IF_ERROR(OnlyConfig({}));
        auto layer = ScalarRescaling(kind, t0 ? args_[1] : args_[0], /*constant_first=*/t1, op_);
        if (!layer.ok()) return e_.Error(layer.status().message());
        OpLayer out;
        out.inputs = {r};
        out.layer = *layer;
        return out;
      }
    }
    if (e_.cls == "Add" || e_.cls == "Multiply" || e_.cls == "Subtract" || e_.cls == "Maximum" ||
        e_.cls == "Minimum") {
      return Binary();
    }
    if (e_.cls == "Concatenate") return Concat();
    if (e_.cls == "Reshape") return Reshape();
    if (e_.cls == "TrueDivide" || e_.cls == "Divide") {
      return e_.Error(op_ + " of two tensors has no ringtrain layer (a division by a number maps to Rescaling): "
                      "write it with Keras layers and save the model again");
    }
    if (e_.cls == "Mean") return Reduction(true);
    if (e_.cls == "Sum") return Reduction(false);
    return e_.Error(op_ + " has no ringtrain layer (Keras ops map only for add, subtract, multiply, maximum, minimum, "
                    "concatenate, reshape, sum and mean): write it with Keras layers and save the model again");
  }

 private:
  const Entry& e_;
  const std::string op_;
  json args_ = json::array();

  Status Read() {
    if (!e_.inbound || !e_.inbound->is_array() || e_.inbound->size() != 1 || !(*e_.inbound)[0].is_object()) {
      return e_.Error("must be called once, with Keras 3's {\"args\": [...], \"kwargs\": {}} inbound node");
    }
    const json& node = (*e_.inbound)[0];
    args_ = node.value("args", json::array());
    const json kwargs = node.value("kwargs", json::object());
    if (!args_.is_array()) return e_.Error("inbound node 'args' must be a list, got " + JsonBrief(args_));
    if (!kwargs.is_object() || !kwargs.empty()) {
      return e_.Error(op_ + " is called with the keyword arguments " + JsonBrief(kwargs) +
                      ", which ringtrain does not map");
    }
    if (!e_.config->is_object()) return e_.Error("'config' must be an object");
    return Status::Ok();
  }

  // "add", "subtract", "multiply", "divide" for the ops a number operand maps to Rescaling.
  std::string Keras3ScalarKind() const {
    if (e_.cls == "Add") return "add";
    if (e_.cls == "Subtract") return "subtract";
    if (e_.cls == "Multiply") return "multiply";
    if (e_.cls == "TrueDivide" || e_.cls == "Divide") return "divide";
    return "";
  }

  StatusOr<TensorRef> Tensor(const json& v, const std::string& arg) const {
    TensorRef r;
    if (KerasTensorRef(v, &r)) return r;
    std::string hint;
    if (e_.cls == "Add" || e_.cls == "Multiply") hint = " (for a constant factor or offset use Rescaling(scale, offset))";
    return e_.Error(op_ + " is called with the constant " + JsonBrief(v) + " as '" + arg +
                    "'; ringtrain maps an op only when every operand is a tensor of the model" + hint);
  }

  // Config keys other than name and `allowed` refused, naming them.
  Status OnlyConfig(std::initializer_list<const char*> allowed) const {
    for (auto& [k, v] : e_.config->items()) {
      bool ok = k == "name";
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) return e_.Error(op_ + " has the argument " + k + "=" + JsonBrief(v) + ", which ringtrain does not map");
    }
    return Status::Ok();
  }

  StatusOr<OpLayer> Binary() {
    RT_RETURN_IF_ERROR(OnlyConfig({}));
    if (args_.size() != 2) return e_.Error(op_ + " must be called on two operands (x1, x2), got " + JsonBrief(args_));
    OpLayer out;
    RT_ASSIGN_OR_RETURN(TensorRef a, Tensor(args_[0], "x1"));
    RT_ASSIGN_OR_RETURN(TensorRef b, Tensor(args_[1], "x2"));
    out.inputs = {a, b};
    out.layer = {{"type", e_.cls}};
    return out;
  }

  StatusOr<OpLayer> Concat() {
    RT_RETURN_IF_ERROR(OnlyConfig({"axis"}));
    if (args_.size() != 1 || !args_[0].is_array()) {
      return e_.Error(op_ + " must be called on one list of tensors, got " + JsonBrief(args_));
    }
    OpLayer out;
    for (const json& t : args_[0]) {
      RT_ASSIGN_OR_RETURN(TensorRef r, Tensor(t, "xs"));
      out.inputs.push_back(std::move(r));
    }
    const json axis = e_.config->value("axis", json(0));  // keras.ops.concatenate's default
    if (!JsonInt(axis, -64, 64)) return e_.Error(op_ + " needs an integer 'axis', got " + JsonBrief(axis));
    out.layer = {{"type", "Concatenate"}, {"axis", *JsonInt(axis, -64, 64)}};
    return out;
  }

  // keras.ops.sum / mean over axes other than the batch (ReductionLayer).
  StatusOr<OpLayer> Reduction(bool mean) {
    RT_RETURN_IF_ERROR(OnlyConfig({"axis", "keepdims"}));
    if (args_.size() != 1) return e_.Error(op_ + " must be called on one tensor, got " + JsonBrief(args_));
    OpLayer out;
    RT_ASSIGN_OR_RETURN(TensorRef x, Tensor(args_[0], "x"));
    out.inputs = {x};
    RT_ASSIGN_OR_RETURN(out.layer, ReductionLayer(e_, op_, mean, e_.config->value("axis", json()),
                                                  e_.config->value("keepdims", json(false))));
    return out;
  }

  StatusOr<OpLayer> Reshape() {
    RT_RETURN_IF_ERROR(OnlyConfig({"newshape"}));
    if (args_.size() != 1) return e_.Error(op_ + " must be called on one tensor, got " + JsonBrief(args_));
    OpLayer out;
    RT_ASSIGN_OR_RETURN(TensorRef x, Tensor(args_[0], "x"));
    out.inputs = {x};
    const json s = e_.config->value("newshape", json());
    if (!s.is_array() || s.size() < 2 || s[0] != -1) {
      return e_.Error(op_ + " reshapes to " + JsonBrief(s) + "; ringtrain maps a shape [-1, d1, ...] (the batch "
                      "kept), as Reshape(target_shape) does");
    }
    out.layer = {{"type", "Reshape"}, {"target_shape", json(s.begin() + 1, s.end())}};
    return out;
  }
};

}  // namespace

StatusOr<OpLayer> TranslateTfOpLambda(const Entry& e) {
  OpCall call(e);
  RT_RETURN_IF_ERROR(call.Read());
  return call.Translate();
}

bool IsKeras3Op(const Entry& e) { return e.module.rfind("keras.src.ops.", 0) == 0; }

StatusOr<OpLayer> TranslateKeras3Op(const Entry& e) { return Keras3Call(e).Translate(); }

}  // namespace ringtrain::nn::keras_json
