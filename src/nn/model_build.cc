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
#include "nn/layers/reduce.h"

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
    {"reduce", "Reduce", &Reduce::Create},
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
                                               const std::set<std::string>& inputs) {
  std::vector<std::string> names(layers.size());
  std::set<std::string> taken = inputs;
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
                                  (inputs.count(names[i]) ? inputs.size() == 1 ? " (or is the model input's name)"
                                                                                : " (or is a model input's name)"
                                                          : "") +
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

// What a layer's "inputs" may name besides earlier layers, for messages: 'the model input, "x"'.
std::string ModelInputsText(const LayerGraph& g) {
  if (g.model_inputs.empty()) return "the model input, \"" + g.input_name + "\"";
  std::string t = "the model inputs";
  for (size_t k = 0; k < g.model_inputs.size(); ++k) t += (k == 0 ? " \"" : ", \"") + g.model_inputs[k].name + "\"";
  return t;
}

// The layer's "inputs": indices of earlier layers (or kModelInput), in order.
// `previous`: the node a layer without "inputs" takes (the one before it, or the model input).
StatusOr<std::vector<int>> ResolveInputs(const nlohmann::json& l, int previous, const std::map<std::string, int>& index,
                                         const LayerGraph& g, const std::string& ctx) {
  auto it = l.find("inputs");
  if (it == l.end()) return std::vector<int>{previous};
  const std::string want = "must be a non-empty array of names of earlier layers (or of " + ModelInputsText(g) + ")";
  if (!it->is_array() || it->empty() || it->size() > 64) {
    return InvalidArgumentError(ctx + ": 'inputs' " + want + ", got " + BriefDump(*it));
  }
  std::vector<int> out;
  for (const auto& v : *it) {
    if (!v.is_string()) return InvalidArgumentError(ctx + ": 'inputs' " + want + ", got " + BriefDump(*it));
    const std::string name = v.get<std::string>();
    if (g.model_inputs.empty() && name == g.input_name) {
      out.push_back(kModelInput);
      continue;
    }
    auto f = index.find(name);
    if (f == index.end()) {
      return InvalidArgumentError(ctx + ": 'inputs' names \"" + name +
                                  "\", which is no earlier layer; a layer may only take the outputs of layers "
                                  "listed before it (or " + ModelInputsText(g) + ")");
    }
    out.push_back(f->second);
  }
  return out;
}

// The internal layers of a model with several inputs: per input, a Cropping2D of its
// values out of the input row (seen as a 1 x total x 1 image) and a Reshape to its shape,
// named as the input. Adds the reshape's index to `index`.
Status BuildInputSlices(LayerGraph* g, std::map<std::string, int>* index) {
  const int total = g->input_shape[0];
  for (const ModelIo& in : g->model_inputs) {
    const std::string ctx = "model.inputs \"" + in.name + "\"";
    const int left = static_cast<int>(in.offset);
    const int right = total - left - static_cast<int>(in.size);
    nlohmann::json crop = {{"cropping", {{0, 0}, {left, right}}}};
    RT_ASSIGN_OR_RETURN(std::unique_ptr<Layer> slice,
                        Cropping2D::Create(crop, in.name + "/values", Shape{1, total, 1}, ctx));
    nlohmann::json view = {{"target_shape", in.shape}};
    RT_ASSIGN_OR_RETURN(std::unique_ptr<Layer> reshape,
                        ShapeView::CreateReshape(view, in.name, slice->output_shape(), ctx));
    const int slice_index = static_cast<int>(g->layers.size());
    g->layers.push_back(std::move(slice));
    g->inputs.push_back({kModelInput});
    g->internal.push_back(true);
    (*index)[in.name] = static_cast<int>(g->layers.size());
    g->layers.push_back(std::move(reshape));
    g->inputs.push_back({slice_index});
    g->internal.push_back(true);
  }
  return Status::Ok();
}

// A second call of `root`'s layer, built as `call`: its weights must be the same tensors
// (the same shapes), and the layer must keep no state besides its trainable weights (a
// BatchNormalization's moving statistics are per layer, not per call).
Status CheckSharedCall(const Layer& root, const Layer& call, const std::string& ctx) {
  const std::vector<ParamSpec> a = root.ParamSpecs(), b = call.ParamSpecs();
  bool same = a.size() == b.size();
  for (size_t k = 0; same && k < a.size(); ++k) same = a[k].shape == b[k].shape;
  if (!same) {
    return InvalidArgumentError(ctx + ": calls layer '" + root.name() + "' again on an input of shape " +
                                ShapeWithBatch(call.input_shapes().at(0)) + ", but its weights were made for " +
                                ShapeWithBatch(root.input_shapes().at(0)) + "; a shared layer takes inputs of one shape");
  }
  bool frozen_state = root.ReducedStatsSize() > 0;
  for (const ParamSpec& s : a) frozen_state = frozen_state || !s.trainable;
  if (frozen_state) {
    return InvalidArgumentError(ctx + ": calls layer '" + root.name() + "' (" + root.class_name() +
                                ") again; a frozen layer, or one with moving statistics, cannot be shared yet (give "
                                "each call its own)");
  }
  return Status::Ok();
}

// "outputs": the layers whose outputs the model gives, in order (default: the last
// layer). Two or more are laid side by side by a last internal Concatenate over their
// values (each seen flat).
Status BuildOutputs(const nlohmann::json& model_json, const std::map<std::string, int>& index, LayerGraph* g) {
  auto it = model_json.find("outputs");
  if (it == model_json.end()) return Status::Ok();
  const char* want = "must be a non-empty array of the names of the layers whose outputs the model gives";
  if (!it->is_array() || it->empty() || it->size() > 64) {
    return InvalidArgumentError(std::string("model: 'outputs' ") + want + ", got " + BriefDump(*it));
  }
  std::vector<int> nodes;
  for (const auto& v : *it) {
    if (!v.is_string()) return InvalidArgumentError(std::string("model: 'outputs' ") + want + ", got " + BriefDump(*it));
    auto f = index.find(v.get<std::string>());
    if (f == index.end() || g->internal[static_cast<size_t>(f->second)]) {
      return InvalidArgumentError("model: 'outputs' names \"" + v.get<std::string>() + "\", which is not a layer of "
                                  "the model");
    }
    if (std::find(nodes.begin(), nodes.end(), f->second) != nodes.end()) {
      return InvalidArgumentError("model: 'outputs' names \"" + v.get<std::string>() + "\" twice");
    }
    nodes.push_back(f->second);
  }
  if (nodes.size() == 1) {
    if (nodes[0] + 1 != static_cast<int>(g->layers.size())) {
      return InvalidArgumentError("model: 'outputs' names one layer, \"" + g->layers[nodes[0]]->name() +
                                  "\", which is not the last; list the output layer last");
    }
    return Status::Ok();
  }
  std::vector<Shape> flat;
  size_t offset = 0;
  for (int n : nodes) {
    const Layer& l = *g->layers[static_cast<size_t>(n)];
    ModelIo out{l.name(), l.output_shape(), offset, static_cast<size_t>(l.output_size())};
    offset += out.size;
    flat.push_back(Shape{static_cast<int>(out.size)});
    g->model_outputs.push_back(std::move(out));
  }
  if (offset > (1 << 30)) return InvalidArgumentError("model: the outputs hold too many values per example");
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Layer> pack,
                      MergeLayer::CreateConcatenate(nlohmann::json::object(), "outputs/packed", flat, "model.outputs"));
  g->layers.push_back(std::move(pack));
  g->inputs.push_back(std::move(nodes));
  g->internal.push_back(true);
  g->sequential = false;
  return Status::Ok();
}

// "inputs": [{"name": "image", "shape": [28, 28, 1]}, {"name": "meta", "shape": [4]}],
// instead of input_shape and input_name. The input row holds them in the order of their
// names.
Status ParseModelInputs(const nlohmann::json& model_json, LayerGraph* g) {
  const nlohmann::json& list = model_json["inputs"];
  const char* want = "must be an array of two or more {\"name\": ..., \"shape\": [...]} objects, one per model input";
  if (!list.is_array() || list.size() < 2 || list.size() > 64) {
    return InvalidArgumentError(std::string("model: 'inputs' ") + want + ", got " + BriefDump(list));
  }
  for (const char* key : {"input_shape", "input_name"}) {
    if (model_json.contains(key)) {
      return InvalidArgumentError(std::string("model: give either 'inputs' or '") + key + "', not both");
    }
  }
  std::set<std::string> seen;
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string ctx = "model.inputs[" + std::to_string(k) + "]";
    const nlohmann::json& e = list[k];
    if (!e.is_object()) return InvalidArgumentError(ctx + ": " + want);
    RT_RETURN_IF_ERROR(CheckKnownFields(e, {"name", "shape"}, ctx));
    if (!e.contains("name") || !ValidName(e["name"])) {
      return InvalidArgumentError(ctx + ": 'name' must be a non-empty string without '/', got " +
                                  BriefDump(e.value("name", nlohmann::json())));
    }
    ModelIo in;
    in.name = e["name"].get<std::string>();
    if (!seen.insert(in.name).second) return InvalidArgumentError(ctx + ": the name \"" + in.name + "\" is taken twice");
    nlohmann::json shape_json = {{"input_shape", e.value("shape", nlohmann::json())}};
    auto shape = ParseInputShape(shape_json);
    if (!shape.ok()) {
      return InvalidArgumentError(ctx + ": 'shape' must be a non-empty array of positive integers (the input's "
                                  "per-example shape, e.g. [28, 28, 1]), got " + BriefDump(e.value("shape", nlohmann::json())));
    }
    in.shape = *shape;
    in.size = static_cast<size_t>(NumElements(in.shape));
    g->model_inputs.push_back(std::move(in));
  }
  std::vector<ModelIo*> by_name;
  for (ModelIo& in : g->model_inputs) by_name.push_back(&in);
  std::sort(by_name.begin(), by_name.end(), [](const ModelIo* a, const ModelIo* b) { return a->name < b->name; });
  size_t total = 0;
  for (ModelIo* in : by_name) {
    in->offset = total;
    total += in->size;
  }
  if (total > (1 << 30)) return InvalidArgumentError("model: the inputs hold too many values per example");
  g->input_shape = {static_cast<int>(total)};
  g->input_name = g->model_inputs[0].name;
  g->sequential = false;
  return Status::Ok();
}

Status BuildLayers(const nlohmann::json& model_json, LayerGraph* g) {
  auto it = model_json.find("layers");
  if (it == model_json.end() || !it->is_array() || it->empty()) {
    return InvalidArgumentError("model: 'layers' must be a non-empty array of layer objects, e.g. "
                                "[{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 10}]");
  }
  const nlohmann::json& layers = *it;
  std::vector<const LayerType*> types;
  std::vector<int> shared(layers.size(), -1);  // the JSON index of the layer a call shares
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string ctx = "model.layers[" + std::to_string(i) + "]";
    const nlohmann::json& l = layers[i];
    if (!l.is_object()) return InvalidArgumentError(ctx + ": must be a JSON object, got " + BriefDump(l));
    if (auto sh = l.find("shares"); sh != l.end()) {
      RT_RETURN_IF_ERROR(CheckKnownFields(l, {"shares", "name", "inputs"}, ctx));
      for (size_t j = 0; j < i && sh->is_string(); ++j) {
        if (layers[j].value("name", nlohmann::json()) == *sh) shared[i] = shared[j] >= 0 ? shared[j] : static_cast<int>(j);
      }
      if (shared[i] < 0) {
        return InvalidArgumentError(ctx + ": 'shares' must name an earlier layer (by its \"name\") to call again, got " +
                                    BriefDump(*sh));
      }
      types.push_back(types[static_cast<size_t>(shared[i])]);
      continue;
    }
    auto t = l.find("type");
    const LayerType* lt = (t != l.end() && t->is_string()) ? FindLayerType(t->get<std::string>()) : nullptr;
    if (lt == nullptr) {
      return InvalidArgumentError(ctx + ": " + (t == l.end() ? std::string("missing 'type'") : "unknown 'type' " + BriefDump(*t)) +
                                  " (supported: " + SupportedTypes() + ")");
    }
    types.push_back(lt);
  }
  std::set<std::string> input_names = {g->input_name};
  if (!g->model_inputs.empty()) {
    input_names.clear();
    for (const ModelIo& in : g->model_inputs) input_names.insert(in.name);
  }
  RT_ASSIGN_OR_RETURN(std::vector<std::string> names, AssignNames(layers, types, input_names));
  std::map<std::string, int> index;
  RT_RETURN_IF_ERROR(BuildInputSlices(g, &index));
  // Layer i of the JSON is node base + i; a model with several inputs starts with theirs.
  const int base = static_cast<int>(g->layers.size());
  std::vector<Shape> shapes;  // each built layer's output shape, by node
  for (const auto& l : g->layers) shapes.push_back(l->output_shape());
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string ctx = "model.layers[" + std::to_string(i) + "] (" + names[i] + ")";
    const int node = base + static_cast<int>(i);
    // Without "inputs" the first layer takes the (first) model input.
    const int previous = i > 0 ? node - 1 : base > 0 ? index[g->model_inputs[0].name] : kModelInput;
    RT_ASSIGN_OR_RETURN(std::vector<int> inputs, ResolveInputs(layers[i], previous, index, *g, ctx));
    bool trainable = true;
    if (auto tr = layers[i].find("trainable"); tr != layers[i].end()) {
      if (!tr->is_boolean()) return InvalidArgumentError(ctx + ": 'trainable' must be true or false, got " + BriefDump(*tr));
      trainable = tr->get<bool>();
    }
    // The graph's own keys are read here; the layer's factory sees its arguments only.
    // A call of a shared layer is built from that layer's arguments.
    const int root = shared[i];
    nlohmann::json args = root >= 0 ? layers[static_cast<size_t>(root)] : layers[i];
    if (root >= 0) {
      args.erase("name");
      if (auto tr = args.find("trainable"); tr != args.end() && tr->is_boolean()) trainable = tr->get<bool>();
    }
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
    int shares = -1;
    if (root >= 0) {
      shares = base + root;
      RT_RETURN_IF_ERROR(CheckSharedCall(*g->layers[static_cast<size_t>(shares)], *layer, ctx));
      g->sequential = false;
    }
    if (inputs != std::vector<int>{node - 1}) g->sequential = false;
    index[names[i]] = node;
    shapes.push_back(layer->output_shape());
    g->layers.push_back(std::move(layer));
    g->inputs.push_back(std::move(inputs));
    g->internal.push_back(false);
    g->shares.push_back(shares);
  }
  g->shares.insert(g->shares.begin(), static_cast<size_t>(base), -1);
  RT_RETURN_IF_ERROR(BuildOutputs(model_json, index, g));
  g->shares.resize(g->layers.size(), -1);
  g->consumers.assign(g->layers.size(), 0);
  for (const auto& in : g->inputs) {
    for (int k : in) {
      if (k != kModelInput) ++g->consumers[static_cast<size_t>(k)];
    }
  }
  for (size_t i = 0; i + 1 < g->layers.size(); ++i) {
    if (g->consumers[i] != 0) continue;
    if (g->internal[i]) {
      return InvalidArgumentError("model: the input \"" + g->layers[i]->name() +
                                  "\" is not used by any layer (name it in a layer's 'inputs')");
    }
    return InvalidArgumentError("model.layers[" + std::to_string(static_cast<int>(i) - base) + "] (" +
                                g->layers[i]->name() +
                                "): its output is not used by any later layer; the model's output is the last "
                                "layer" + std::string(g->model_outputs.empty() ? "" : " or one named in 'outputs'") +
                                ", and every other layer must feed one (check the 'inputs' lists)");
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
    RT_RETURN_IF_ERROR(
        CheckKnownFields(model_json, {"input_shape", "input_name", "inputs", "outputs", "layers", "name"}, "model"));
    if (model_json.contains("inputs")) {
      RT_RETURN_IF_ERROR(ParseModelInputs(model_json, graph));
      RT_RETURN_IF_ERROR(BuildLayers(model_json, graph));
      return Status::Ok();
    }
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
