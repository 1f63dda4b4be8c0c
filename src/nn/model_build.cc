#include "nn/model_build.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>

#include "nn/conv2d.h"
#include "nn/dense.h"
#include "nn/json_fields.h"
#include "nn/max_pool2d.h"
#include "nn/reshape_flatten.h"

namespace ringtrain::nn::internal {

namespace {

using LayerFactory = StatusOr<std::unique_ptr<Layer>> (*)(const nlohmann::json&, std::string, const Shape&,
                                                          const std::string&);

struct LayerType {
  const char* type;  // canonical job-file name, also the auto-name prefix
  LayerFactory create;
};

const LayerType kLayerTypes[] = {
    {"reshape", &ShapeView::CreateReshape}, {"flatten", &ShapeView::CreateFlatten},
    {"conv2d", &Conv2D::Create},            {"max_pooling2d", &MaxPool2D::Create},
    {"dense", &Dense::Create},
};

// Accepts the canonical names and Keras' class names in any case ("Conv2D", "MaxPooling2D").
const LayerType* FindLayerType(std::string t) {
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "maxpooling2d" || t == "max_pool2d" || t == "maxpool2d") t = "max_pooling2d";
  for (const LayerType& lt : kLayerTypes) {
    if (t == lt.type) return &lt;
  }
  return nullptr;
}

StatusOr<Shape> ParseInputShape(const nlohmann::json& model_json) {
  auto it = model_json.find("input_shape");
  const char* want = "must be a non-empty array of positive integers (the per-example shape, e.g. [28, 28])";
  if (it == model_json.end()) return InvalidArgumentError(std::string("model: missing 'input_shape', which ") + want);
  if (!it->is_array() || it->empty() || it->size() > 8) {
    return InvalidArgumentError(std::string("model: 'input_shape' ") + want + ", got " + BriefDump(*it));
  }
  Shape shape;
  int64_t total = 1;
  for (const auto& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > (1 << 30)) {
      return InvalidArgumentError(std::string("model: 'input_shape' ") + want + ", got " + BriefDump(*it));
    }
    shape.push_back(static_cast<int>(d.get<int64_t>()));
    total *= shape.back();
    if (total > (1 << 30)) return InvalidArgumentError("model: 'input_shape' " + BriefDump(*it) + " is too large");
  }
  return shape;
}

// Explicit names are checked; the rest get Keras' auto names per type ("dense",
// "dense_1", ...), skipping any name the user already took.
StatusOr<std::vector<std::string>> AssignNames(const nlohmann::json& layers, const std::vector<const LayerType*>& types) {
  std::vector<std::string> names(layers.size());
  std::set<std::string> taken;
  for (size_t i = 0; i < layers.size(); ++i) {
    auto it = layers[i].find("name");
    if (it == layers[i].end()) continue;
    const std::string ctx = "model.layers[" + std::to_string(i) + "] (" + types[i]->type + ")";
    if (!it->is_string() || it->get<std::string>().empty() || it->get<std::string>().find('/') != std::string::npos) {
      return InvalidArgumentError(ctx + ": 'name' must be a non-empty string without '/', got " + BriefDump(*it));
    }
    names[i] = it->get<std::string>();
    if (!taken.insert(names[i]).second) {
      return InvalidArgumentError(ctx + ": 'name' \"" + names[i] + "\" is used by an earlier layer; names must be unique");
    }
  }
  std::map<std::string, int> counters;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!names[i].empty()) continue;
    int& n = counters[types[i]->type];
    std::string candidate;
    do {
      candidate = n == 0 ? types[i]->type : std::string(types[i]->type) + "_" + std::to_string(n);
      ++n;
    } while (taken.count(candidate));
    taken.insert(candidate);
    names[i] = candidate;
  }
  return names;
}

StatusOr<std::vector<std::unique_ptr<Layer>>> BuildLayers(const nlohmann::json& model_json, const Shape& input) {
  auto it = model_json.find("layers");
  if (it == model_json.end() || !it->is_array() || it->empty()) {
    return InvalidArgumentError("model: 'layers' must be a non-empty array of layer objects, e.g. "
                                "[{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 10}]");
  }
  const nlohmann::json& layers = *it;
  std::vector<const LayerType*> types;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string ctx = "model.layers[" + std::to_string(i) + "]";
    const nlohmann::json& l = layers[i];
    if (!l.is_object()) return InvalidArgumentError(ctx + ": must be a JSON object, got " + BriefDump(l));
    auto t = l.find("type");
    const LayerType* lt = (t != l.end() && t->is_string()) ? FindLayerType(t->get<std::string>()) : nullptr;
    if (lt == nullptr) {
      return InvalidArgumentError(ctx + ": " + (t == l.end() ? std::string("missing 'type'") : "unknown 'type' " + BriefDump(*t)) +
                                  " (supported: reshape, flatten, conv2d, max_pooling2d, dense)");
    }
    types.push_back(lt);
  }
  RT_ASSIGN_OR_RETURN(std::vector<std::string> names, AssignNames(layers, types));
  std::vector<std::unique_ptr<Layer>> built;
  Shape shape = input;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string ctx = "model.layers[" + std::to_string(i) + "] (" + types[i]->type + ")";
    RT_ASSIGN_OR_RETURN(std::unique_ptr<Layer> layer, types[i]->create(layers[i], names[i], shape, ctx));
    if (layer->output_size() > (1 << 30)) {
      return InvalidArgumentError(ctx + ": output shape " + ShapeToString(layer->output_shape()) +
                                  " is too large per example");
    }
    shape = layer->output_shape();
    built.push_back(std::move(layer));
  }
  if (shape.size() != 1) {
    return InvalidArgumentError("model: the last layer must output one logit per class, but its output shape is " +
                                ShapeToString(shape) + "; end the model with flatten and dense");
  }
  return built;
}

}  // namespace

Status BuildModelLayers(const nlohmann::json& model_json, Shape* input_shape,
                        std::vector<std::unique_ptr<Layer>>* layers) {
  try {
    RT_RETURN_IF_ERROR(CheckKnownFields(model_json, {"input_shape", "layers", "name"}, "model"));
    RT_ASSIGN_OR_RETURN(*input_shape, ParseInputShape(model_json));
    RT_ASSIGN_OR_RETURN(*layers, BuildLayers(model_json, *input_shape));
  } catch (const std::exception& e) {
    // The readers above check types first; this is a backstop so nothing escapes.
    return InvalidArgumentError(std::string("model: malformed model description: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn::internal
