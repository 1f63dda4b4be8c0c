#include "modelfiles/keras3_config.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "modelfiles/keras3_layout.h"

namespace ringtrain::modelfiles {
namespace {

using nlohmann::json;

// Keras' class of each job-file type ringtrain has (nn/model_build.cc's registry).
const std::map<std::string, std::string>& KerasClasses() {
  static const std::map<std::string, std::string> classes = {
      {"reshape", "Reshape"},
      {"flatten", "Flatten"},
      {"conv2d", "Conv2D"},
      {"max_pooling2d", "MaxPooling2D"},
      {"dense", "Dense"},
      {"random_flip", "RandomFlip"},
      {"random_translation", "RandomTranslation"},
      {"random_rotation", "RandomRotation"},
      {"random_crop", "RandomCrop"},
      {"batch_normalization", "BatchNormalization"},
      {"sync_batch_normalization", "SyncBatchNormalization"},
      {"layer_normalization", "LayerNormalization"},
      {"dropout", "Dropout"},
      {"activation", "Activation"},
      {"re_lu", "ReLU"},
      {"leaky_re_lu", "LeakyReLU"},
      {"softmax", "Softmax"},
      {"rescaling", "Rescaling"},
      {"add", "Add"},
      {"multiply", "Multiply"},
      {"concatenate", "Concatenate"},
      {"depthwise_conv2d", "DepthwiseConv2D"},
      {"separable_conv2d", "SeparableConv2D"},
      {"average_pooling2d", "AveragePooling2D"},
      {"global_average_pooling2d", "GlobalAveragePooling2D"},
      {"global_max_pooling2d", "GlobalMaxPooling2D"},
      {"zero_padding2d", "ZeroPadding2D"},
      {"cropping2d", "Cropping2D"},
      {"up_sampling2d", "UpSampling2D"},
      {"conv2d_transpose", "Conv2DTranspose"},
      {"permute", "Permute"},
      {"resizing", "Resizing"},
      {"center_crop", "CenterCrop"},
      {"subtract", "Subtract"},
      {"average", "Average"},
      {"maximum", "Maximum"},
      {"minimum", "Minimum"},
      {"normalization", "Normalization"},
      {"spatial_dropout2d", "SpatialDropout2D"},
      {"gaussian_noise", "GaussianNoise"},
      {"random_brightness", "RandomBrightness"},
      {"random_contrast", "RandomContrast"},
      {"random_zoom", "RandomZoom"},
  };
  return classes;
}

// tf.keras 2 arguments Keras 3's constructors refuse; ringtrain takes them only at their defaults.
const std::set<std::string>& Keras2Only() {
  static const std::set<std::string> keys = {"renorm", "renorm_clipping", "renorm_momentum", "fused",
                                             "virtual_batch_size", "adjustment"};
  return keys;
}

// A layer's output in Keras 3's history form: [layer, call (node index), tensor].
struct History {
  std::string layer;
  int call = 0;
};

json KerasTensor(const History& h) {
  // Keras replaces it by the named layer's output when it rebuilds the graph: only
  // keras_history matters, the shape is a placeholder of any rank.
  return {{"class_name", "__keras_tensor__"},
          {"config", {{"shape", json::array({nullptr})}, {"dtype", "float32"}, {"keras_history", {h.layer, h.call, 0}}}}};
}

}  // namespace

StatusOr<json> Keras3ConfigFromCompact(const json& compact) {
  const bool several_inputs = compact.is_object() && compact.contains("inputs") && compact["inputs"].is_array();
  if (!compact.is_object() || !compact.contains("layers") || !compact["layers"].is_array() ||
      compact["layers"].empty() ||
      (!several_inputs && (!compact.contains("input_shape") || !compact["input_shape"].is_array()))) {
    return InvalidArgumentError("the model to write as a Keras config has no \"input_shape\" or \"layers\"");
  }
  const json& layers = compact["layers"];
  // Each input's name and per-example shape (the compact form's "inputs", or its one input).
  std::vector<std::pair<std::string, json>> model_inputs;
  if (several_inputs) {
    for (const json& in : compact["inputs"]) {
      if (!in.is_object() || !in.contains("name") || !in["name"].is_string() || !in.contains("shape")) {
        return InvalidArgumentError("the model to write as a Keras config has a malformed \"inputs\" entry");
      }
      model_inputs.emplace_back(in["name"].get<std::string>(), in["shape"]);
    }
  } else {
    model_inputs.emplace_back(compact.value("input_name", std::string("input")), compact["input_shape"]);
  }
  const std::string input_name = model_inputs.at(0).first;  // what the first layer takes by default
  std::set<std::string> input_names;
  for (const auto& in : model_inputs) input_names.insert(in.first);
  // The class of each layer, then the names the model builder gives (nn/model_build.cc).
  std::vector<std::string> classes, names(layers.size());
  std::set<std::string> taken = input_names;
  for (size_t i = 0; i < layers.size(); ++i) {
    const json& l = layers[i];
    if (l.is_object() && l.contains("shares")) {  // another call of an earlier layer: its class
      for (size_t j = 0; j < i; ++j) {
        if (layers[j].is_object() && layers[j].value("name", json()) == l["shares"]) classes.push_back(classes[j]);
      }
      if (classes.size() != i + 1) {
        return InvalidArgumentError("model.layers[" + std::to_string(i) + "]: 'shares' names no earlier layer");
      }
      if (l.contains("name") && l["name"].is_string()) names[i] = l["name"].get<std::string>(), taken.insert(names[i]);
      continue;
    }
    const std::string type = l.is_object() ? l.value("type", std::string()) : std::string();
    std::string cls;
    if (auto it = KerasClasses().find(type); it != KerasClasses().end()) cls = it->second;
    for (const auto& [snake, keras] : KerasClasses()) {
      if (keras == type) cls = keras;
    }
    if (cls.empty()) {
      return InvalidArgumentError("model.layers[" + std::to_string(i) + "]: the type '" + type +
                                  "' has no Keras class ringtrain knows");
    }
    classes.push_back(cls);
    if (l.contains("name") && l["name"].is_string()) {
      names[i] = l["name"].get<std::string>();
      taken.insert(names[i]);
    }
  }
  std::map<std::string, int> counters;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!names[i].empty()) continue;
    const std::string base = SnakeCase(classes[i]);
    int& n = counters[base];
    std::string candidate;
    do {
      candidate = n == 0 ? base : base + "_" + std::to_string(n);
      ++n;
    } while (taken.count(candidate));
    taken.insert(candidate);
    names[i] = candidate;
  }

  json out_layers = json::array();
  for (const auto& [name, shape] : model_inputs) {
    json batch_shape = json::array({nullptr});
    for (const json& d : shape) batch_shape.push_back(d);
    out_layers.push_back({{"module", "keras.layers"},
                          {"class_name", "InputLayer"},
                          {"config", {{"batch_shape", batch_shape}, {"dtype", "float32"}, {"sparse", false},
                                      {"name", name}}},
                          {"registered_name", nullptr},
                          {"name", name},
                          {"inbound_nodes", json::array()}});
  }
  std::map<std::string, size_t> index;
  // Each name's output as Keras 3 refers to it: a later call of a shared layer is another
  // inbound node (call) of that layer, at out_layers[position].
  std::map<std::string, History> history;
  std::map<std::string, size_t> position;
  for (const auto& in : model_inputs) history[in.first] = {in.first, 0};
  for (size_t i = 0; i < layers.size(); ++i) {
    const json& l = layers[i];
    const bool again = l.contains("shares");
    json config = {{"name", names[i]}, {"trainable", l.value("trainable", true)}, {"dtype", "float32"}};
    for (const auto& [key, value] : l.items()) {
      if (key == "type" || key == "name" || key == "inputs" || key == "trainable" || Keras2Only().count(key)) continue;
      config[key] = value;
    }
    std::vector<std::string> inputs;
    if (l.contains("inputs") && l["inputs"].is_array()) {
      for (const json& in : l["inputs"]) {
        const std::string name = in.is_string() ? in.get<std::string>() : std::string();
        if (input_names.count(name) == 0 && index.count(name) == 0) {
          return InvalidArgumentError("model.layers[" + std::to_string(i) + "]: 'inputs' names '" + name +
                                      "', which is no earlier layer");
        }
        inputs.push_back(name);
      }
    } else {
      inputs.push_back(i == 0 ? input_name : names[i - 1]);
    }
    json args = json::array();
    static const std::set<std::string> kMerge = {"Add", "Multiply", "Concatenate", "Subtract",
                                                 "Average", "Maximum", "Minimum"};
    const bool merge = kMerge.count(classes[i]) > 0;
    if (merge) {
      json list = json::array();
      for (const std::string& in : inputs) list.push_back(KerasTensor(history[in]));
      args.push_back(list);
    } else {
      for (const std::string& in : inputs) args.push_back(KerasTensor(history[in]));
    }
    index[names[i]] = i;
    if (again) {
      const History& root = history[l["shares"].get<std::string>()];
      json& nodes = out_layers[position.at(root.layer)]["inbound_nodes"];
      history[names[i]] = {root.layer, static_cast<int>(nodes.size())};
      nodes.push_back({{"args", args}, {"kwargs", json::object()}});
      continue;
    }
    history[names[i]] = {names[i], 0};
    position[names[i]] = out_layers.size();
    out_layers.push_back({{"module", "keras.layers"},
                          {"class_name", classes[i]},
                          {"config", config},
                          {"registered_name", nullptr},
                          {"name", names[i]},
                          {"inbound_nodes", json::array({{{"args", args}, {"kwargs", json::object()}}})}});
  }
  const std::string model_name = compact.value("name", std::string("functional"));
  // One reference for one input (output), a list of them for several, as Keras 3 writes them.
  json input_layers = json::array({input_name, 0, 0});
  if (model_inputs.size() > 1) {
    input_layers = json::array();
    for (const auto& in : model_inputs) input_layers.push_back(json::array({in.first, 0, 0}));
  }
  const History& last = history[names.back()];
  json output_layers = json::array({last.layer, last.call, 0});
  if (compact.contains("outputs") && compact["outputs"].is_array() && compact["outputs"].size() > 1) {
    output_layers = json::array();
    for (const json& o : compact["outputs"]) {
      const History& h = history[o.is_string() ? o.get<std::string>() : std::string()];
      output_layers.push_back(json::array({h.layer, h.call, 0}));
    }
  }
  return json{{"module", "keras"},
              {"class_name", "Functional"},
              {"registered_name", "Functional"},
              {"config",
               {{"name", model_name},
                {"trainable", true},
                {"layers", out_layers},
                {"input_layers", input_layers},
                {"output_layers", output_layers}}}};
}

}  // namespace ringtrain::modelfiles
