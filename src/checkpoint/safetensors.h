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
#include "env/env.h"

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

// Encode + env::WriteFileAtomically (crash-safe: a temporary file, fsync, rename, fsync
// of the directory) / env->ReadFile + Decode, through `env` (env/env.h). Errors name
// the path; failures to write or read the file, and a corrupt file, are tagged
// Subject::kStorage (exit code 6); bad tensors (the preconditions above) are
// INVALID_ARGUMENT, untagged: a bug of the caller's.
Status SaveSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata, env::Env* env = env::Default());
Status LoadSafetensors(const std::string& path, std::map<std::string, Tensor>* tensors,
                       std::map<std::string, std::string>* metadata, env::Env* env = env::Default());

}  // namespace ringtrain::checkpoint
