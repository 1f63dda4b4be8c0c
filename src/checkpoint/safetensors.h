// The safetensors file format (https://github.com/huggingface/safetensors):
// 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the raw little-endian tensor bytes. Loadable from Python's safetensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/file.h"  // ReadFile
#include "common/status.h"

namespace ringtrain::checkpoint {

// The largest header DecodeSafetensors accepts (the reference implementation's limit);
// a file is at most 8 bytes more than this plus its tensors' data.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

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
// multiple of 8 bytes. "__metadata__" is written only when metadata is non-empty.
// Preconditions (SaveSafetensors checks them and returns INVALID_ARGUMENT): names
// unique, non-empty, not "__metadata__", UTF-8; dimensions >= 0; data non-null when
// the tensor has elements.
std::string EncodeSafetensors(const std::vector<TensorView>& tensors,
                              const std::map<std::string, std::string>& metadata);
// Parses bytes; DATA_LOSS with a reason for anything malformed (sizes, offsets, dtype),
// naming the tensor; UNIMPLEMENTED for a valid dtype other than F32 (e.g. F16). The
// tensors must tile the data section exactly, as the reference implementation
// requires. Clears both maps first and leaves them empty on error; metadata may be
// null when not wanted.
Status DecodeSafetensors(const std::string& bytes, std::map<std::string, Tensor>* tensors,
                         std::map<std::string, std::string>* metadata);

// Crash-safe write: a temporary file "<path>.tmp.<pid>" in the same directory, fsync,
// rename over path, fsync the directory. Creates missing parent directories. On
// failure the temporary file is removed and the error names the path and errno text;
// an existing file at `path` is either untouched or wholly replaced. Blocks on disk
// I/O. Two threads of one process must not write the same path at once (they would
// share the temporary name); different paths are fine.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);
// The whole file; NOT_FOUND if it does not exist.

// Encode + WriteFileAtomically / ReadFile + Decode; errors name the path.
Status SaveSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata);
Status LoadSafetensors(const std::string& path, std::map<std::string, Tensor>* tensors,
                       std::map<std::string, std::string>* metadata);

}  // namespace ringtrain::checkpoint
