// Internal to keras_json.cc: reading one layer entry of a Keras model JSON and
// translating its config into a compact layer. See keras_json.h for the contract;
// every error here is INVALID_ARGUMENT "model.keras_json: ...". Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn::keras_json {

// "model.keras_json: <what>".
Status Bad(const std::string& what);

// A tensor reference: tf.keras 2's [layer, node_index, tensor_index] or the
// keras_history of a Keras 3 __keras_tensor__.
struct TensorRef {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
};

// One entry of a model's "layers": {"class_name", "config", "name"?, "inbound_nodes"?,
// Keras 3's "module", "registered_name", "build_config", "compile_config",
// "shared_object_id"}.
struct Entry {
  std::string name;
  std::string cls;
  bool has_module = false;      // "module" present (Keras 3, tf.keras 2.13+ .keras configs)
  bool module_null = false;     // "module": null (Keras 3 writes it for classes of __main__)
  std::string module;           // its value when a string
  std::string registered_name;  // "registered_name" when a string ("Custom>MyLayer"), else ""
  const nlohmann::json* config = nullptr;   // an object (a legacy Sequential's may be an array)
  const nlohmann::json* inbound = nullptr;  // "inbound_nodes", or null when absent
  bool is_model = false;                    // Sequential, Functional or Model
  bool is_input = false;                    // InputLayer
  // "model.keras_json: layer 'name' (Class): " + what ("model 'name'" for a model).
  Status Error(const std::string& what) const;
};

bool IsModelClass(const std::string& cls);

// Checks the entry's keys, class (keras_json_classes.h) and name ('/'-free, as Keras
// requires).
StatusOr<Entry> ReadEntry(const nlohmann::json& e, size_t index);

// An InputLayer's config checked (float32, dense, not optional): its batch shape.
StatusOr<nlohmann::json> InputLayerBatchShape(const Entry& input);

// A batch shape [batch, d1, ...] as the compact input_shape [d1, ...]: every dim
// after the batch a positive integer, else the refusal that names the shape.
StatusOr<nlohmann::json> InputShapeFromBatchShape(const nlohmann::json& batch_shape, const std::string& where);

// The compact layer of a plain (non-model, non-input) entry, without "inputs".
// `frozen`: an enclosing model has trainable false.
StatusOr<nlohmann::json> CompactLayer(const Entry& e, bool frozen);

// Checks a "dtype" value: absent/null, "float32" or a float32 DTypePolicy. `who`
// prefixes the error ("layer 'x' (Dense): " or "model 'm': ").
Status CheckDtype(const nlohmann::json& dtype, const std::string& who);

}  // namespace ringtrain::nn::keras_json
