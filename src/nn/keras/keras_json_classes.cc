#include "nn/keras/keras_json_classes.h"

#include <utility>

#include "common/json.h"

namespace ringtrain::nn::keras_json {
namespace {

using nlohmann::json;

// Keras 1.2's layer classes that Keras 2 renamed or removed, with what replaced them.
const std::pair<const char*, const char*> kKeras1Classes[] = {
    {"Convolution1D", "Conv1D"},
    {"Convolution2D", "Conv2D"},
    {"Convolution3D", "Conv3D"},
    {"AtrousConvolution1D", "Conv1D with dilation_rate"},
    {"AtrousConvolution2D", "Conv2D with dilation_rate"},
    {"SeparableConvolution2D", "SeparableConv2D"},
    {"Deconvolution2D", "Conv2DTranspose"},
    {"Deconvolution3D", "Conv3DTranspose"},
    {"Merge", "the merge layers Add, Multiply, Concatenate, Average, Maximum, Dot"},
    {"MaxoutDense", "nothing: it was removed"},
    {"Highway", "nothing: it was removed"},
    {"TimeDistributedDense", "TimeDistributed(Dense)"},
    {"SReLU", "nothing: it was removed"},
    {"ParametricSoftplus", "nothing: it was removed"},
    {"ThresholdedLinear", "nothing: it was removed"},
};

// Keras 1.2's argument names that Keras 2 renamed (Keras 2.0 still read them, with a
// warning, and wrote the new names).
const std::pair<const char*, const char*> kKeras1Arguments[] = {
    {"nb_filter", "filters"},
    {"nb_row", "kernel_size"},
    {"nb_col", "kernel_size"},
    {"border_mode", "padding"},
    {"subsample", "strides"},
    {"dim_ordering", "data_format"},
    {"output_dim", "units"},
    {"init", "kernel_initializer"},
    {"W_regularizer", "kernel_regularizer"},
    {"b_regularizer", "bias_regularizer"},
    {"W_constraint", "kernel_constraint"},
    {"b_constraint", "bias_constraint"},
    {"beta_init", "beta_initializer"},
    {"gamma_init", "gamma_initializer"},
    {"input_dtype", "dtype"},
    {"atrous_rate", "dilation_rate"},
};

// tf.keras 2's other layers that wrap a TensorFlow call on Keras tensors.
bool IsOtherTfOpLayer(const std::string& cls) {
  return cls == "SlicingOpLambda" || cls == "ClassMethod" || cls == "InstanceMethod" || cls == "InstanceProperty";
}

constexpr const char* kResave =
    "ringtrain reads the JSON of Keras 2 and later: load the model with Keras 2 and save it again (model.to_json())";

}  // namespace

bool IsKerasModule(const std::string& module) {
  for (const char* own : {"keras", "tf_keras", "tensorflow.keras", "tensorflow.python.keras"}) {
    const std::string prefix = own;
    if (module == prefix || module.rfind(prefix + ".", 0) == 0) return true;
  }
  return false;
}

bool IsCustomClass(const Entry& e) {
  if (e.registered_name.find('>') != std::string::npos) return true;
  if (!e.has_module) return false;
  return e.module_null || !IsKerasModule(e.module);
}

std::string CustomClassOrigin(const Entry& e) {
  std::string origin;
  if (e.has_module) origin = e.module_null ? "module __main__ (written as null)" : "module '" + e.module + "'";
  if (e.registered_name.find('>') != std::string::npos) {
    origin += (origin.empty() ? "" : ", ") + std::string("registered as '") + e.registered_name + "'";
  }
  return origin;
}

Status CheckLayerClass(const Entry& e) {
  if (IsCustomClass(e)) {
    const std::string what = e.is_model ? "a custom model class" : "a custom layer class";
    return e.Error(what + " from " + CustomClassOrigin(e) +
                   "; ringtrain builds Keras' own layers only (its code is not in the JSON): rebuild this part of the "
                   "model from built-in Keras layers and save it again");
  }
  if (e.is_model || e.is_input) return Status::Ok();
  for (const auto& [old_name, replacement] : kKeras1Classes) {
    if (e.cls == old_name) {
      return e.Error(std::string("a Keras 1 layer (Keras 2 replaced it with ") + replacement + "); " + kResave);
    }
  }
  if (e.cls == "Lambda") {
    return e.Error("a Lambda layer holds Python bytecode, which ringtrain never runs: use a built-in layer instead "
                   "(for arithmetic the merge layers Add, Multiply, Concatenate, or Rescaling or Activation) and "
                   "save the model again");
  }
  if (IsOtherTfOpLayer(e.cls)) {
    std::string op;
    if (e.config->is_object()) {
      for (const char* key : {"function", "method_name", "attr_name"}) {
        const json v = e.config->value(key, json());
        if (v.is_string()) op = v.get<std::string>();
      }
    }
    return e.Error("a tf.keras 2 op layer" + (op.empty() ? std::string() : " (" + op + ")") +
                   " that ringtrain does not map to a layer: write it with Keras layers (Reshape, Cropping2D, "
                   "the merge layers) and save the model again");
  }
  return CheckNoKeras1Arguments(e);
}

Status CheckNoKeras1Arguments(const Entry& e) {
  if (!e.config->is_object()) return Status::Ok();
  for (const auto& [old_name, new_name] : kKeras1Arguments) {
    // Embedding's output_dim is Keras 2's and 3's name too.
    if (e.cls == "Embedding" && std::string(old_name) == "output_dim") continue;
    if (e.config->contains(old_name)) {
      return e.Error(std::string("'") + old_name + "' is a Keras 1 argument (Keras 2 calls it '" + new_name + "'); " +
                     kResave);
    }
  }
  return Status::Ok();
}

}  // namespace ringtrain::nn::keras_json
