// Internal to the Keras model JSON translation: the layer classes that are refused
// before their config is read, each with one line that says what to do instead.
//
//  - Keras 1 layers (Convolution2D, Merge, ...) and Keras 1 arguments (nb_filter,
//    output_dim, W_regularizer, ...): Keras 2 renamed them; re-save with Keras 2+.
//  - Lambda: its config holds Python bytecode, which ringtrain never runs.
//  - Custom classes: a "module" that is not Keras' own (null is a class defined in
//    __main__) or a "registered_name" with a package ("Custom>MyLayer").
//  - tf.keras 2's op layers other than TFOpLambda (SlicingOpLambda, ClassMethod,
//    InstanceMethod, InstanceProperty). TFOpLambda itself is mapped by
//    keras_json_tfop.h.
//
// Errors: INVALID_ARGUMENT "model.keras_json: layer 'x' (Class): ...". Pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "nn/keras/keras_json_layer.h"

namespace ringtrain::nn::keras_json {

// Whether a Keras 3 / tf.keras 2.13+ "module" names Keras itself ("keras",
// "keras.layers", "keras.src.models.functional", tf_keras' own).
bool IsKerasModule(const std::string& module);

// Whether the entry is a custom class: its module is not Keras' own (or null) or its
// registered_name has a package prefix. Legacy entries (no "module") are not.
bool IsCustomClass(const Entry& e);

// "module 'my_pkg.layers', registered as 'Custom>MyLayer'": where a custom class comes from.
std::string CustomClassOrigin(const Entry& e);

// The refusals above for a layer entry (a model entry is checked for being custom only).
Status CheckLayerClass(const Entry& e);

// Keras 1 argument names in a layer config: the refusal naming the first one found.
Status CheckNoKeras1Arguments(const Entry& e);

}  // namespace ringtrain::nn::keras_json
