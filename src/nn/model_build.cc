#include "nn/model_build.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>

#include "nn/layers/batch_norm.h"
#include "nn/layers/activation_layers.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dense.h"
#include "nn/layers/dropout.h"
#include "nn/layers/avg_pool2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dense.h"
#include "nn/layers/depthwise_conv2d.h"
#include "nn/layers/global_pool2d.h"
#include "nn/keras/json_fields.h"
#include "nn/layers/layer_norm.h"
#include "nn/layers/max_pool2d.h"
#include "nn/layers/random_affine.h"
#include "nn/layers/random_crop.h"
#include "nn/layers/random_flip.h"
#include "nn/layers/merge_layers.h"
#include "nn/layers/rescaling.h"
#include "nn/layers/reshape_flatten.h"
#include "nn/layers/separable_conv2d.h"
#include "nn/layers/zero_padding2d.h"
#include "nn/layers/cropping2d.h"
#include "nn/layers/up_sampling2d.h"
#include "nn/layers/conv2d_transpose.h"
#include "nn/layers/permute.h"
#include "nn/layers/image_resizing.h"
#include "nn/layers/normalization.h"
#include "nn/layers/noise_layers.h"
#include "nn/layers/image_adjust_layers.h"
#include "nn/layers/random_zoom.h"

namespace ringtrain::nn::internal {

namespace {

using LayerFactory = StatusOr<std::unique_ptr<Layer>> (*)(const nlohmann::json&, std::string, const Shape&,
                                                          const std::string&);
using MultiInputFactory = StatusOr<std::unique_ptr<Layer>> (*)(const nlohmann::json&, std::string,
                                                               const std::vector<Shape>&, const std::string&);

struct LayerType {
  const char* type;        // canonical job-file name (Keras' snake-case name), also the auto-name prefix
  const char* class_name;  // Keras' class name, accepted as a type in any case
  LayerFactory create = nullptr;            // one input
  MultiInputFactory create_multi = nullptr;  // several inputs (Add, Concatenate, ...)
};

const LayerType kLayerTypes[] = {
    {"reshape", "Reshape", &ShapeView::CreateReshape},
    {"flatten", "Flatten", &ShapeView::CreateFlatten},
    {"conv2d", "Conv2D", &Conv2D::Create},
    {"max_pooling2d", "MaxPooling2D", &MaxPool2D::Create},
    {"dense", "Dense", &Dense::Create},
    {"random_flip", "RandomFlip", &RandomFlip::Create},
    {"random_translation", "RandomTranslation", &RandomAffine::CreateTranslation},
    {"random_rotation", "RandomRotation", &RandomAffine::CreateRotation},
    {"random_crop", "RandomCrop", &RandomCrop::Create},
    {"batch_normalization", "BatchNormalization", &BatchNorm::Create},
    {"sync_batch_normalization", "SyncBatchNormalization", &BatchNorm::CreateSync},
    {"layer_normalization", "LayerNormalization", &LayerNorm::Create},
    {"dropout", "Dropout", &Dropout::Create},
    {"activation", "Activation", &ActivationLayer::CreateActivation},
    {"re_lu", "ReLU", &ActivationLayer::CreateReLU},
    {"leaky_re_lu", "LeakyReLU", &ActivationLayer::CreateLeakyReLU},
    {"softmax", "Softmax", &ActivationLayer::CreateSoftmax},
    {"rescaling", "Rescaling", &Rescaling::Create},
    {"add", "Add", nullptr, &MergeLayer::CreateAdd},
    {"multiply", "Multiply", nullptr, &MergeLayer::CreateMultiply},
    {"concatenate", "Concatenate", nullptr, &MergeLayer::CreateConcatenate},
    {"depthwise_conv2d", "DepthwiseConv2D", &DepthwiseConv2D::Create},
    {"separable_conv2d", "SeparableConv2D", &SeparableConv2D::Create},
    {"average_pooling2d", "AveragePooling2D", &AvgPool2D::Create},
    {"global_average_pooling2d", "GlobalAveragePooling2D", &GlobalPool2D::CreateAverage},
    {"global_max_pooling2d", "GlobalMaxPooling2D", &GlobalPool2D::CreateMax},
    {"zero_padding2d", "ZeroPadding2D", &ZeroPadding2D::Create},
    {"cropping2d", "Cropping2D", &Cropping2D::Create},
    {"up_sampling2d", "UpSampling2D", &UpSampling2D::Create},
    {"conv2d_transpose", "Conv2DTranspose", &Conv2DTranspose::Create},
    {"permute", "Permute", &Permute::Create},
    {"resizing", "Resizing", &ImageResizing::CreateResizing},
    {"center_crop", "CenterCrop", &ImageResizing::CreateCenterCrop},
    {"subtract", "Subtract", nullptr, &MergeLayer::CreateSubtract},
    {"average", "Average", nullptr, &MergeLayer::CreateAverage},
    {"maximum", "Maximum", nullptr, &MergeLayer::CreateMaximum},
    {"minimum", "Minimum", nullptr, &MergeLayer::CreateMinimum},
    {"normalization", "Normalization", &Normalization::Create},
    {"spatial_dropout2d", "SpatialDropout2D", &SpatialDropout2D::Create},
    {"gaussian_noise", "GaussianNoise", &GaussianNoise::Create},
    {"random_brightness", "RandomBrightness", &ImageAdjust::CreateBrightness},
    {"random_contrast", "RandomContrast", &ImageAdjust::CreateContrast},
    {"random_zoom", "RandomZoom", &RandomZoom::Create},
};

std::string Lower(std::string t) {
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  return t;
}

// Accepts the canonical names and Keras' class names in any case ("Conv2D", "MaxPooling2D").
const LayerType* FindLayerType(const std::string& name) {
  std::string t = Lower(name);
  if (t == "maxpool2d" || t == "max_pool2d") t = "max_pooling2d";
  for (const LayerType& lt : kLayerTypes) {
    if (t == lt.type || t == Lower(lt.class_name)) return &lt;
  }
  return nullptr;
}

std::string SupportedTypes() {
  std::string list;
  for (const LayerType& lt : kLayerTypes) list += std::string(list.empty() ? "" : ", ") + lt.type;
  return list;
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

bool ValidName(const nlohmann::json& v) {
  return v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().find('/') == std::string::npos;
}

// Explicit names are checked; the rest get Keras' auto names per type ("dense",
// "dense_1", ...), skipping any name the user already took.
StatusOr<std::vector<std::string>> AssignNames(const nlohmann::json& layers, const std::vector<const LayerType*>& types,
                                               const std::string& input_name) {
  std::vector<std::string> names(layers.size());
  std::set<std::string> taken = {input_name};
  for (size_t i = 0; i < layers.size(); ++i) {
    auto it = layers[i].find("name");
    if (it == layers[i].end()) continue;
    const std::string ctx = "model.layers[" + std::to_string(i) + "] (" + types[i]->type + ")";
    if (!ValidName(*it)) {
      return InvalidArgumentError(ctx + ": 'name' must be a non-empty string without '/', got " + BriefDump(*it));
    }
    names[i] = it->get<std::string>();
    if (!taken.insert(names[i]).second) {
      return InvalidArgumentError(ctx + ": 'name' \"" + names[i] + "\" is used by an earlier layer" +
                                  (names[i] == input_name ? " (or is the model input's name)" : "") +
                                  "; names must be unique");
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

// The layer's "inputs": indices of earlier layers (or kModelInput), in order.
StatusOr<std::vector<int>> ResolveInputs(const nlohmann::json& l, size_t i, const std::map<std::string, int>& index,
                                         const std::string& input_name, const std::string& ctx) {
  auto it = l.find("inputs");
  if (it == l.end()) return std::vector<int>{static_cast<int>(i) - 1};  // i == 0: kModelInput
  const char* want = "must be a non-empty array of names of earlier layers (or of the model input, \"";
  if (!it->is_array() || it->empty() || it->size() > 64) {
    return InvalidArgumentError(ctx + ": 'inputs' " + want + input_name + "\"), got " + BriefDump(*it));
  }
  std::vector<int> out;
  for (const auto& v : *it) {
    if (!v.is_string()) return InvalidArgumentError(ctx + ": 'inputs' " + want + input_name + "\"), got " + BriefDump(*it));
    const std::string name = v.get<std::string>();
    if (name == input_name) {
      out.push_back(kModelInput);
      continue;
    }
    auto f = index.find(name);
    if (f == index.end()) {
      return InvalidArgumentError(ctx + ": 'inputs' names \"" + name +
                                  "\", which is no earlier layer; a layer may only take the outputs of layers "
                                  "listed before it (or the model input, \"" + input_name + "\")");
    }
    out.push_back(f->second);
  }
  return out;
}

Status BuildLayers(const nlohmann::json& model_json, LayerGraph* g) {
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
                                  " (supported: " + SupportedTypes() + ")");
    }
    types.push_back(lt);
  }
  RT_ASSIGN_OR_RETURN(std::vector<std::string> names, AssignNames(layers, types, g->input_name));
  std::map<std::string, int> index;
  std::vector<Shape> shapes;  // each built layer's output shape
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string ctx = "model.layers[" + std::to_string(i) + "] (" + names[i] + ")";
    RT_ASSIGN_OR_RETURN(std::vector<int> inputs, ResolveInputs(layers[i], i, index, g->input_name, ctx));
    bool trainable = true;
    if (auto tr = layers[i].find("trainable"); tr != layers[i].end()) {
      if (!tr->is_boolean()) return InvalidArgumentError(ctx + ": 'trainable' must be true or false, got " + BriefDump(*tr));
      trainable = tr->get<bool>();
    }
    // The graph's own keys are read here; the layer's factory sees its arguments only.
    nlohmann::json args = layers[i];
    args.erase("inputs");
    args.erase("trainable");
    std::vector<Shape> in_shapes;
    for (int k : inputs) in_shapes.push_back(k == kModelInput ? g->input_shape : shapes[static_cast<size_t>(k)]);
    std::unique_ptr<Layer> layer;
    if (types[i]->create_multi != nullptr) {
      RT_ASSIGN_OR_RETURN(layer, types[i]->create_multi(args, names[i], in_shapes, ctx));
    } else if (inputs.size() != 1) {
      return InvalidArgumentError(ctx + ": a " + types[i]->class_name + " layer takes one input, but 'inputs' names " +
                                  std::to_string(inputs.size()));
    } else {
      RT_ASSIGN_OR_RETURN(layer, types[i]->create(args, names[i], in_shapes[0], ctx));
    }
    if (layer->output_size() > (1 << 30)) {
      return InvalidArgumentError(ctx + ": output shape " + ShapeToString(layer->output_shape()) +
                                  " is too large per example");
    }
    layer->set_trainable(trainable);
    if (inputs != std::vector<int>{static_cast<int>(i) - 1}) g->sequential = false;
    index[names[i]] = static_cast<int>(i);
    shapes.push_back(layer->output_shape());
    g->layers.push_back(std::move(layer));
    g->inputs.push_back(std::move(inputs));
  }
  g->consumers.assign(g->layers.size(), 0);
  for (const auto& in : g->inputs) {
    for (int k : in) {
      if (k != kModelInput) ++g->consumers[static_cast<size_t>(k)];
    }
  }
  for (size_t i = 0; i + 1 < g->layers.size(); ++i) {
    if (g->consumers[i] == 0) {
      return InvalidArgumentError("model.layers[" + std::to_string(i) + "] (" + names[i] +
                                  "): its output is not used by any later layer; the model's output is the last "
                                  "layer, and every other layer must feed one (check the 'inputs' lists)");
    }
  }
  return Status::Ok();
}

}  // namespace

std::vector<bool> LayerGraph::TrainableUpstream() const {
  std::vector<bool> up(layers.size(), false);
  for (size_t i = 0; i < layers.size(); ++i) {
    bool own = false;
    if (layers[i]->trainable()) {
      for (const ParamSpec& s : layers[i]->ParamSpecs()) own = own || s.trainable;
    }
    bool from_inputs = false;
    for (int k : inputs[i]) from_inputs = from_inputs || (k != kModelInput && up[static_cast<size_t>(k)]);
    up[i] = own || from_inputs;
  }
  return up;
}

Status BuildLayerGraph(const nlohmann::json& model_json, LayerGraph* graph) {
  try {
    RT_RETURN_IF_ERROR(CheckKnownFields(model_json, {"input_shape", "input_name", "layers", "name"}, "model"));
    if (auto n = model_json.find("input_name"); n != model_json.end()) {
      if (!ValidName(*n)) {
        return InvalidArgumentError("model: 'input_name' must be a non-empty string without '/', got " + BriefDump(*n));
      }
      graph->input_name = n->get<std::string>();
    }
    RT_ASSIGN_OR_RETURN(graph->input_shape, ParseInputShape(model_json));
    RT_RETURN_IF_ERROR(BuildLayers(model_json, graph));
  } catch (const std::exception& e) {
    // The readers above check types first; this is a backstop so nothing escapes.
    return InvalidArgumentError(std::string("model: malformed model description: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn::internal
