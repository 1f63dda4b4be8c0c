// The safetensors file format (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the raw little-endian tensor bytes. Loadable from Python's safetensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::checkpoint {

struct TensorView {  // borrowed, for writing
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;  // product(shape) floats
};

struct Tensor {  // owned, from reading
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Serialises to bytes. Byte-for-byte deterministic for equal inputs: tensors are laid
// out in name order, the header's keys are sorted, and it is padded with spaces to a
// multiple of 8 bytes.
std::string EncodeSafetensors(const std::vector<TensorView>& tensors,
                              const std::map<std::string, std::string>& metadata);
// Parses bytes; DATA_LOSS with a reason for anything malformed (sizes, offsets, dtype).
Status DecodeSafetensors(const std::string& bytes, std::map<std::string, Tensor>* tensors,
                         std::map<std::string, std::string>* metadata);

// Crash-safe write: a temporary file in the same directory, fsync, rename over path,
// fsync the directory. Creates missing parent directories.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);
StatusOr<std::string> ReadFile(const std::string& path);

Status SaveSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata);
Status LoadSafetensors(const std::string& path, std::map<std::string, Tensor>* tensors,
                       std::map<std::string, std::string>* metadata);

}  // namespace ringtrain::checkpoint
