// Loading a saved model for inference: the job's "model" section gives the
// architecture, a weights file the weights: safetensors (what save_model /
// model_checkpoint wrote), or a Keras .keras archive or .h5 file or a TensorFlow.js
// model.json (modelfiles/weights_file.h, told apart by the file's first bytes). No
// cluster, no TF_CONFIG: Keras' load_model() for this project's files.
//
// Threading: any thread may call these; each call owns what it creates. Blocking:
// LoadModel reads the weights file (disk I/O only).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "checkpoint/safetensors.h"
#include "common/memory_bound.h"
#include "common/status.h"
#include "config/job_config.h"
#include "nn/model.h"

namespace ringtrain::inference {

// Copies `tensors` into model->params(). The names and shapes must be exactly the
// model's ParamInfo ones ("conv2d/kernel" [3, 3, 1, 4], ...): every parameter present
// with its shape, and no tensor the model lacks. Otherwise FAILED_PRECONDITION naming
// the first disagreement -- the tensor and both shapes -- with `source` (e.g. the file
// path) saying where the tensors came from. On error the model is left unchanged.
Status LoadWeights(nn::Model* model, const std::map<std::string, checkpoint::Tensor>& tensors,
                   const std::string& source);

// Builds the job's model and loads the weights at `weights_path` into it.
// Errors: INVALID_ARGUMENT about kConfig for a bad "model" section (as nn::Model::FromJson
// reports it, prefixed with "job: model"); about kStorage (exit 6) everything about the
// file: NOT_FOUND for a missing file; INVALID_ARGUMENT for a path that is not a regular
// file (a directory, FIFO, /dev/zero: never read) or longer than the job's model could
// need; DATA_LOSS for a corrupt one and for a tensor holding NaN or infinity (naming the
// tensor and the first bad index); UNIMPLEMENTED for a dtype other than F32 (both naming
// the path); FAILED_PRECONDITION when the file's tensors do not fit the job's model
// (LoadWeights). The Keras and tfjs readers' errors (modelfiles/*.h) are about kStorage too.
StatusOr<std::unique_ptr<nn::Model>> LoadModel(const config::JobConfig& job, const std::string& weights_path);

// Checks, before anything is loaded, that running the job's model over the data source
// `source` (named `field`, e.g. "data.eval") in batches of `batch` fits `bound`: the
// weights, the activations of one batch and the data as loaded (common/memory_bound.h:
// RESOURCE_EXHAUSTED about kConfig, naming `batch_field` -- "--batch_size" -- when the
// batch is what makes it large). Errors of the data files as data::EstimateShard's.
Status CheckInferenceMemory(const config::JobConfig& job, const nlohmann::json& source, const std::string& field,
                            int batch, const std::string& batch_field, const MemoryBound& bound);

}  // namespace ringtrain::inference
