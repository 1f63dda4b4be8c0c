#include "nn/keras/keras_json_layer.h"

#include <set>

#include "common/json.h"
#include "nn/keras/keras_json_classes.h"

namespace ringtrain::nn::keras_json {
namespace {

using nlohmann::json;

// Layer names end up in weight names ("<layer>/kernel") and messages: Keras refuses
// '/' in them, and no real name is longer than this.
constexpr size_t kMaxNameLength = 256;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Keras initializer, regularizer and other object configs: {"class_name", "config"},
// with Keras 3's "module", "registered_name" and "shared_object_id" (one object given to
// several layers) dropped. `key` names the argument.
StatusOr<json> NormalizeObject(const json& v, const Entry& e, const std::string& key) {
  for (auto& [k, unused] : v.items()) {
    if (k != "class_name" && k != "config" && k != "module" && k != "registered_name" && k != "shared_object_id") {
      return e.Error("'" + key + "' has the key '" + k + "', which is not part of a Keras object (class_name, config)");
    }
  }
  if (!v["class_name"].is_string()) return e.Error("'" + key + ".class_name' must be a string");
  json out = {{"class_name", v["class_name"]}, {"config", json::object()}};
  if (v.contains("config") && !v["config"].is_null()) {
    if (!v["config"].is_object()) return e.Error("'" + key + ".config' must be an object, got " + JsonBrief(v["config"]));
    out["config"] = v["config"];
  }
  // tf.keras 2, Keras 3 and tfjs all read VarianceScaling's "normal" as a truncated
  // normal (Keras 3 renames it on construction); the compact form says which.
  if (out["class_name"] == "VarianceScaling" && out["config"].value("distribution", json()) == "normal") {
    out["config"]["distribution"] = "truncated_normal";
  }
  return out;
}

}  // namespace

Status Bad(const std::string& what) { return InvalidArgumentError("model.keras_json: " + what); }

Status Entry::Error(const std::string& what) const {
  return Bad((is_model ? "model '" : "layer '") + name + "' (" + cls + "): " + what);
}

bool IsModelClass(const std::string& cls) { return cls == "Sequential" || cls == "Functional" || cls == "Model"; }

StatusOr<Entry> ReadEntry(const json& e, size_t index) {
  const std::string where = "layers[" + std::to_string(index) + "]";
  if (!e.is_object()) return Bad(where + " must be an object {\"class_name\": ..., \"config\": {...}}, got " + JsonBrief(e));
  Entry out;
  const auto cls = e.find("class_name");
  if (cls == e.end() || !cls->is_string() || cls->get<std::string>().empty()) {
    return Bad(where + " has no \"class_name\" string");
  }
  out.cls = cls->get<std::string>();
  out.is_model = IsModelClass(out.cls);
  out.is_input = out.cls == "InputLayer";
  const auto config = e.find("config");
  const bool config_ok = config != e.end() && (config->is_object() || (out.cls == "Sequential" && config->is_array()));
  if (!config_ok) return Bad(where + " (" + out.cls + ") has no \"config\" object");
  out.config = &*config;
  // The name: beside the config (Functional entries) or in it (Sequential entries);
  // Keras writes both the same.
  const json* name = e.contains("name") ? &e["name"] : nullptr;
  if (config->is_object() && config->contains("name")) {
    const json& inner = (*config)["name"];
    if (name && *name != inner) {
      return Bad(where + " (" + out.cls + ") is named " + JsonBrief(*name) + " but its config says " + JsonBrief(inner));
    }
    name = &inner;
  }
  if (!name || !name->is_string() || name->get<std::string>().empty()) {
    return Bad(where + " (" + out.cls + ") has no name");
  }
  out.name = name->get<std::string>();
  if (out.name.size() > kMaxNameLength || out.name.find('/') != std::string::npos) {
    return Bad(where + " (" + out.cls + "): the name " + JsonBrief(*name) +
               " must be at most 256 characters without '/' (it becomes part of weight names)");
  }
  for (auto& [k, v] : e.items()) {
    if (k == "inbound_nodes") {
      out.inbound = &v;
    } else if (k == "module") {
      out.has_module = true;
      out.module_null = v.is_null();
      if (v.is_string()) out.module = v.get<std::string>();
    } else if (k == "registered_name") {
      if (v.is_string()) out.registered_name = v.get<std::string>();
    } else if (k != "class_name" && k != "config" && k != "name" && k != "build_config" && k != "compile_config" &&
               k != "shared_object_id") {
      // build_config: the input shape Keras built the layer with (the model's input decides it here);
      // compile_config: a nested model's compile() arguments (the job's loss and optimizer decide);
      // shared_object_id: Keras 3's mark of one object serialized twice (shared layers are found by
      // their calls).
      return out.Error("unknown key '" + k + "' beside class_name and config; it is not part of Keras' model JSON");
    }
  }
  RT_RETURN_IF_ERROR(CheckLayerClass(out));
  return out;
}

Status CheckDtype(const json& dtype, const std::string& who) {
  if (dtype.is_null() || dtype == "float32") return Status::Ok();
  std::string name = dtype.is_string() ? dtype.get<std::string>() : "";
  std::string policy_class;
  if (dtype.is_object()) {
    // Keras 3's DTypePolicy (FloatDTypePolicy in 3.0-3.3; QuantizedDTypePolicy and
    // its kin for quantized layers), tf.keras 2's Policy: {"class_name", "config":
    // {"name": "float32"}}, with Keras 3's module and registered_name.
    const json cls = dtype.value("class_name", json());
    const json config = dtype.value("config", json());
    const bool policy = cls.is_string() && (cls == "Policy" || EndsWith(cls.get<std::string>(), "DTypePolicy"));
    if (!policy || !config.is_object() || !config.value("name", json()).is_string()) {
      return Bad(who + "'dtype' " + JsonBrief(dtype) + " is not a dtype or a Keras DTypePolicy");
    }
    name = config["name"].get<std::string>();
    policy_class = cls.get<std::string>();
    if (name == "float32" && policy_class.rfind("Quantized", 0) != 0) return Status::Ok();
  }
  if (name.rfind("mixed_", 0) == 0) {
    return Bad(who + "'dtype' is the mixed precision policy \"" + name +
               "\"; mixed precision is not implemented yet (ringtrain computes in float32): build the model without "
               "a mixed precision policy");
  }
  if (!policy_class.empty()) {
    return Bad(who + "'dtype' is the " + policy_class + " \"" + name +
               "\"; ringtrain computes in float32 and does not quantize: build the model with the float32 policy "
               "(the default)");
  }
  return Bad(who + "'dtype' " + (name.empty() ? JsonBrief(dtype) : "\"" + name + "\"") +
             " is not supported; ringtrain computes in float32 (build the model with dtype float32, the default)");
}

StatusOr<json> InputLayerBatchShape(const Entry& input) {
  const json& c = *input.config;
  const json* shape = nullptr;
  for (auto& [k, v] : c.items()) {
    if (k == "batch_input_shape" || k == "batch_shape") {
      if (shape) return input.Error("has both 'batch_input_shape' and 'batch_shape'");
      shape = &v;
    } else if (k == "dtype") {
      RT_RETURN_IF_ERROR(CheckDtype(v, "layer '" + input.name + "' (InputLayer): "));
    } else if (k == "sparse" || k == "ragged" || k == "optional") {
      if (!v.is_null() && v != false) {
        return input.Error("'" + k + "' is " + JsonBrief(v) + "; ringtrain takes a dense, required input (" + k +
                           " false)");
      }
    } else if (k == "trainable") {  // meaningless without weights, but a bool
      if (!v.is_boolean()) return input.Error("'trainable' must be true or false, got " + JsonBrief(v));
    } else if (k != "name" && !(k == "input_tensor" && v.is_null())) {
      return input.Error("unknown key '" + k + "'; an InputLayer has batch_shape (batch_input_shape), dtype, sparse, "
                         "ragged and name");
    }
  }
  if (!shape) return input.Error("has no 'batch_shape' (Keras 3) or 'batch_input_shape' (tf.keras 2)");
  return *shape;
}

StatusOr<json> InputShapeFromBatchShape(const json& batch_shape, const std::string& where) {
  if (!batch_shape.is_array() || batch_shape.size() < 2) {
    return Bad(where + ": the input shape " + JsonBrief(batch_shape) +
               " must be a list [batch, d1, ...] with at least one dimension after the batch");
  }
  json dims = json::array();
  std::string text;
  bool unknown = false;
  for (size_t i = 1; i < batch_shape.size(); ++i) {
    const json& d = batch_shape[i];
    text += (i > 1 ? ", " : "") + (d.is_null() ? std::string("null") : JsonBrief(d));
    if (d.is_null()) {
      unknown = true;
      continue;
    }
    const std::optional<int64_t> v = JsonInt(d, 1, int64_t{1} << 30);
    if (!v) return Bad(where + ": input dimension " + JsonBrief(d) + " must be a positive integer (at most 2^30)");
    dims.push_back(*v);
  }
  if (unknown) {
    return Bad("input shape [" + text + "] has unknown dimensions; ringtrain needs a fixed input shape (give the "
               "Input or the first layer a shape without None)");
  }
  return dims;
}

StatusOr<json> CompactLayer(const Entry& e, bool frozen) {
  const json& c = *e.config;
  bool trainable = true;
  json out = json::object();
  for (auto& [k, v] : c.items()) {
    if (k == "name") continue;  // checked by ReadEntry
    if (k == "trainable") {
      if (!v.is_boolean()) return e.Error("'trainable' must be true or false, got " + JsonBrief(v));
      trainable = v.get<bool>();
    } else if (k == "dtype") {
      RT_RETURN_IF_ERROR(CheckDtype(v, "layer '" + e.name + "' (" + e.cls + "): "));
    } else if (k == "data_format") {
      if (v == "channels_first") {
        return e.Error("'data_format' is \"channels_first\"; ringtrain stores images channels last (NHWC): build the "
                       "model with data_format=\"channels_last\" (Keras' default)");
      }
      if (!v.is_null() && v != "channels_last") return e.Error("'data_format' " + JsonBrief(v) + " is not supported");
    } else if (EndsWith(k, "_constraint")) {
      if (!v.is_null()) {
        return e.Error("'" + k + "' is " + JsonBrief(v) + "; constraints are not supported: remove it");
      }
    } else if (k == "activity_regularizer") {
      if (!v.is_null()) {
        return e.Error("'activity_regularizer' is " + JsonBrief(v) +
                       "; activity regularizers are not supported (kernel and bias regularizers are): remove it");
      }
    } else if (k == "quantization_config") {  // Keras 3's Dense, EinsumDense, Embedding
      if (!v.is_null()) {
        return e.Error("'quantization_config' is " + JsonBrief(v) +
                       "; quantized layers are not implemented: save the model before quantizing it");
      }
    } else if (k == "lora_rank") {  // Keras 3 writes it (and lora_alpha) only when LoRA is on
      if (!v.is_null() && v != 0) {
        return e.Error("'lora_rank' is " + JsonBrief(v) +
                       "; LoRA is not implemented: save the model without enable_lora() (or merge the LoRA weights)");
      }
    } else if (k == "lora_alpha") {
      continue;  // meaningful only with lora_rank
    } else if (k == "batch_input_shape" || k == "batch_shape" || k == "input_shape") {
      continue;  // the model input's shape, read by the model translation
    } else if (k == "type" || k == "inputs") {
      return e.Error("config key '" + k + "' is not a Keras layer argument");
    } else if (v.is_object() && v.contains("class_name")) {
      RT_ASSIGN_OR_RETURN(out[k], NormalizeObject(v, e, k));
    } else {
      out[k] = v;
    }
  }
  out["type"] = e.cls;
  out["name"] = e.name;
  out["trainable"] = trainable && !frozen;
  return out;
}

}  // namespace ringtrain::nn::keras_json
