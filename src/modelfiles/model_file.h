// What a model file holds for ringtrain: the model's Keras JSON when the file carries one,
// and its weights named as the model's ParamInfo names them ("<layer>/<weight>").
#pragma once

#include <map>
#include <string>

#include "checkpoint/safetensors.h"

namespace ringtrain::modelfiles {

struct ModelFile {
  // The Keras model JSON the file carries: a .keras archive's config.json (Keras 3), a
  // Keras 2 .h5's "model_config" attribute (model.save), a tfjs model.json's
  // "modelTopology"; "" for weights-only files (save_weights, safetensors).
  std::string config_json;
  std::map<std::string, checkpoint::Tensor> tensors;
};

}  // namespace ringtrain::modelfiles
