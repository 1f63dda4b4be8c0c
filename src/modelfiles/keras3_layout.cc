#include "modelfiles/keras3_layout.h"

#include <cctype>
#include <regex>

namespace ringtrain::modelfiles {
namespace {

using nlohmann::json;

bool IsModelClass(const std::string& c) { return c == "Functional" || c == "Sequential" || c == "Model"; }

bool Flag(const json& config, const char* key, bool def) {
  auto it = config.find(key);
  return it != config.end() && it->is_boolean() ? it->get<bool>() : def;
}

constexpr int kMaxNesting = 16;

Status Walk(const json& model, const std::string& prefix, int depth, std::vector<Keras3Layer>* out) {
  if (depth > kMaxNesting) return DataLossError("models nested more than 16 deep in the model config");
  const std::string cls = model.is_object() ? model.value("class_name", std::string()) : std::string();
  const json* config = model.is_object() && model.contains("config") ? &model["config"] : nullptr;
  if (!IsModelClass(cls) || config == nullptr || !config->is_object() || !config->contains("layers") ||
      !(*config)["layers"].is_array()) {
    return DataLossError("the model config at '" + (prefix.empty() ? std::string("/") : prefix) +
                         "' is not a Keras Functional or Sequential model with a \"layers\" list");
  }
  std::map<std::string, int> used;
  for (const json& layer : (*config)["layers"]) {
    const std::string class_name = layer.is_object() ? layer.value("class_name", std::string()) : std::string();
    const json* lconfig = layer.is_object() && layer.contains("config") ? &layer["config"] : nullptr;
    if (class_name.empty() || lconfig == nullptr || !lconfig->is_object() || !lconfig->contains("name") ||
        !(*lconfig)["name"].is_string()) {
      return DataLossError("a layer of the model config lacks a \"class_name\" or a \"config\" with a \"name\"");
    }
    // A Sequential model's layers leave out its InputLayer (Sequential.layers).
    if (cls == "Sequential" && class_name == "InputLayer") continue;
    std::string key = SnakeCase(class_name);
    auto [it, fresh] = used.emplace(key, 0);
    if (!fresh) key += "_" + std::to_string(++it->second);
    Keras3Layer entry{prefix + "layers/" + key, (*lconfig)["name"].get<std::string>(), class_name, *lconfig};
    out->push_back(entry);
    if (IsModelClass(class_name)) RT_RETURN_IF_ERROR(Walk(layer, entry.path + "/", depth + 1, out));
  }
  return Status::Ok();
}

// The model's own weights of `layer` in ParamInfo order, as weight names.
std::vector<std::string> ModelOrder(const std::string& layer, const std::vector<std::string>* model_weight_names) {
  std::vector<std::string> names;
  if (model_weight_names == nullptr) return names;
  const std::string prefix = layer + "/";
  for (const std::string& n : *model_weight_names) {
    if (n.compare(0, prefix.size(), prefix) == 0) names.push_back(n.substr(prefix.size()));
  }
  return names;
}

std::string Describe(const Keras3Layer& l) { return "layer '" + l.name + "' (" + l.class_name + ", at " + l.path + ")"; }

}  // namespace

std::string SnakeCase(const std::string& class_name) {
  static const std::regex non_word("[^A-Za-z0-9_]+");
  static const std::regex word_start("(.)([A-Z][a-z]+)");
  static const std::regex lower_upper("([a-z])([A-Z])");
  std::string s = std::regex_replace(class_name, non_word, "");
  s = std::regex_replace(s, word_start, "$1_$2");
  s = std::regex_replace(s, lower_upper, "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

StatusOr<std::vector<Keras3Layer>> Keras3Layers(const json& model_config) {
  std::vector<Keras3Layer> layers;
  RT_RETURN_IF_ERROR(Walk(model_config, "", 0, &layers));
  return layers;
}

std::optional<std::vector<std::string>> Keras3VariableNames(const std::string& c, const json& config) {
  std::vector<std::string> names;
  const bool use_bias = Flag(config, "use_bias", true);
  if (c == "Dense" || c == "Conv2D" || c == "Conv2DTranspose") {
    names = {"kernel"};
    if (use_bias) names.push_back("bias");
  } else if (c == "DepthwiseConv2D") {
    names = {"depthwise_kernel"};
    if (use_bias) names.push_back("bias");
  } else if (c == "SeparableConv2D") {
    names = {"depthwise_kernel", "pointwise_kernel"};
    if (use_bias) names.push_back("bias");
  } else if (c == "BatchNormalization" || c == "SyncBatchNormalization") {
    if (Flag(config, "scale", true)) names.push_back("gamma");
    if (Flag(config, "center", true)) names.push_back("beta");
    names.push_back("moving_mean");
    names.push_back("moving_variance");
  } else if (c == "LayerNormalization") {
    if (Flag(config, "scale", true)) names.push_back("gamma");
    if (Flag(config, "center", true) && !Flag(config, "rms_scaling", false)) names.push_back("beta");
  } else if (c == "InputLayer" || c == "Reshape" || c == "Flatten" || c == "MaxPooling2D" ||
             c == "AveragePooling2D" || c == "GlobalAveragePooling2D" || c == "GlobalMaxPooling2D" ||
             c == "ZeroPadding2D" || c == "Dropout" || c == "Activation" || c == "ReLU" || c == "LeakyReLU" ||
             c == "Softmax" || c == "Rescaling" || c == "Add" || c == "Multiply" || c == "Concatenate" ||
             c == "RandomFlip" || c == "RandomTranslation" || c == "RandomRotation" || c == "RandomCrop" ||
             c == "Cropping2D" || c == "UpSampling2D" || c == "Permute" || c == "Resizing" || c == "CenterCrop" ||
             IsModelClass(c)) {
    // No variables (a nested model's are its layers').
  } else {
    return std::nullopt;
  }
  return names;
}

StatusOr<std::map<std::string, checkpoint::Tensor>> ReadKeras3Weights(
    const H5File& file, const json& model_config, const std::vector<std::string>* model_weight_names,
    uint64_t budget) {
  RT_ASSIGN_OR_RETURN(std::vector<Keras3Layer> layers, Keras3Layers(model_config));
  std::map<std::string, checkpoint::Tensor> out;
  // tf.keras 2.13's archives name the "layers" groups "_layer_checkpoint_dependencies" (as
  // Keras 3's H5Entry falls back to).
  const bool keras_2_13 = !file.IsGroup("layers") && file.IsGroup("_layer_checkpoint_dependencies");
  for (const Keras3Layer& l : layers) {
    std::string vars = l.path + "/vars";
    if (keras_2_13) {
      for (size_t at = vars.find("layers"); at != std::string::npos; at = vars.find("layers", at + 30)) {
        vars.replace(at, 6, "_layer_checkpoint_dependencies");
      }
    }
    size_t count = 0;
    if (file.IsGroup(vars)) {
      RT_ASSIGN_OR_RETURN(std::vector<std::string> members, file.Members(vars));
      count = members.size();
    }
    std::optional<std::vector<std::string>> names = Keras3VariableNames(l.class_name, l.config);
    if (!names.has_value()) {
      names = ModelOrder(l.name, model_weight_names);
      if (names->size() != count) {
        return DataLossError(Describe(l) + " has " + std::to_string(count) +
                             " variables in the weights file, and ringtrain knows no order for them (the model has " +
                             std::to_string(names->size()) + " weights of that layer)");
      }
    }
    if (names->size() != count) {
      if (count == 0 && !file.IsGroup(vars)) {
        return DataLossError(Describe(l) + " has no variables in the weights file: the file is not this model's");
      }
      return DataLossError(Describe(l) + " has " + std::to_string(count) + " variables in the weights file where " +
                           "Keras' " + l.class_name + " with this config has " + std::to_string(names->size()) +
                           ": the file is not this model's");
    }
    for (size_t i = 0; i < count; ++i) {
      RT_ASSIGN_OR_RETURN(checkpoint::Tensor t, file.ReadFloats(vars + "/" + std::to_string(i), &budget));
      const std::string name = l.name + "/" + (*names)[i];
      if (!out.emplace(name, std::move(t)).second) {
        return DataLossError("two layers of the model config are named '" + l.name + "'");
      }
    }
  }
  return out;
}

Status WriteKeras3Weights(H5File* file, const json& model_config,
                          const std::map<std::string, checkpoint::Tensor>& tensors,
                          const std::vector<std::string>* model_weight_names) {
  RT_ASSIGN_OR_RETURN(std::vector<Keras3Layer> layers, Keras3Layers(model_config));
  RT_RETURN_IF_ERROR(file->CreateGroup("vars"));
  for (const Keras3Layer& l : layers) {
    const std::string vars = l.path + "/vars";
    RT_RETURN_IF_ERROR(file->CreateGroup(vars));
    std::optional<std::vector<std::string>> names = Keras3VariableNames(l.class_name, l.config);
    if (!names.has_value()) names = ModelOrder(l.name, model_weight_names);
    for (size_t i = 0; i < names->size(); ++i) {
      const std::string name = l.name + "/" + (*names)[i];
      auto it = tensors.find(name);
      if (it == tensors.end()) {
        return InvalidArgumentError("the model has no weight '" + name + "', which Keras' " + l.class_name +
                                    " with this config has");
      }
      RT_RETURN_IF_ERROR(file->WriteFloats(vars + "/" + std::to_string(i), it->second.shape, it->second.data.data()));
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::modelfiles
