// What a model needs in memory, worked out from the job's "model" section alone --
// before the parameters are allocated -- so that a job whose model or batch would
// not fit is refused up front (common/memory_bound.h) instead of dying in bad_alloc
// or the OOM killer halfway through.
//
// The estimate follows what the CPU kernels really allocate (backends/cpu, the kernels'
// scratch functions): every layer's output, and for training the input copy, the
// activation gradients and the larger backward scratch. It is an estimate of the
// order of magnitude ("about 3.1 TiB"), not an accounting to the byte.
//
// Threading: a ModelFootprint is immutable; any thread may use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace ringtrain::nn {

class ModelFootprint {
 public:
  // Validates `model_json` exactly as Model::FromJson does (the same errors, plus
  // INVALID_ARGUMENT above 2^31 - 1 parameters) without allocating the parameters.
  static StatusOr<ModelFootprint> FromJson(const nlohmann::json& model_json);

  uint64_t num_params() const { return num_params_; }
  uint64_t input_size() const { return input_size_; }   // floats per example
  uint64_t output_size() const { return output_size_; }  // floats per example of the last layer's output
  uint64_t output_positions() const { return output_positions_; }  // labels per example (Model::output_positions)
  // The layer holding the most parameters, for messages: "model.layers[4] (dense_1)".
  const std::string& largest_layer() const { return largest_layer_; }

  // Bytes of the layers' buffers for a batch of `batch` examples: every output and the
  // forward scratch; with `training`, also the model's copy of the input, the
  // activation and input gradients and the backward scratch. Saturates, never wraps.
  uint64_t ActivationBytes(uint64_t batch, bool training) const;

  // The kernels pass a convolution's rows (batch x output positions) to BLAS as a
  // 32-bit int: INVALID_ARGUMENT when `batch` would exceed that, naming `batch_field`
  // ("batch_size_per_worker", "--batch_size") and the layer.
  Status CheckBatch(uint64_t batch, const std::string& batch_field) const;

 private:
  struct LayerCost {
    std::string name;
    uint64_t forward = 0;      // floats per example kept by forward (the output)
    uint64_t backward = 0;     // floats per example added by backward (gradients)
    uint64_t scratch_fwd = 0;  // floats per example of forward scratch
    uint64_t scratch_bwd = 0;  // floats per example of backward scratch (shares the buffer)
    uint64_t rows_per_example = 0;  // conv: output positions (BLAS's M per example)
    bool dense = false;        // dense scratch rounds the batch up to 16
    uint64_t dense_units = 0;
  };
  std::vector<LayerCost> layers_;
  uint64_t num_params_ = 0, input_size_ = 0, output_size_ = 0, output_positions_ = 1;
  std::string largest_layer_;
};

}  // namespace ringtrain::nn
