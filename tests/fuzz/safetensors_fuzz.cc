// The safetensors reader (model files, checkpoints and backups' weights): any bytes
// either decode or give one DATA_LOSS / UNIMPLEMENTED line; and what decodes
// re-encodes to bytes that decode to the same tensors and metadata.
#include <cstring>
#include <string>

#include "checkpoint/safetensors.h"
#include "fuzz_target.h"

using namespace ringtrain;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::map<std::string, checkpoint::Tensor> tensors;
  std::map<std::string, std::string> metadata;
  Status s = checkpoint::DecodeSafetensors(bytes, &tensors, &metadata);
  if (!s.ok()) {
    FUZZ_CHECK(s.code() == Code::kDataLoss || s.code() == Code::kUnimplemented);
    FUZZ_CHECK(tensors.empty() && metadata.empty());
    return 0;
  }
  std::vector<checkpoint::TensorView> views;
  for (const auto& [name, t] : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    FUZZ_CHECK(n == t.data.size());
    views.push_back({name, t.shape, t.data.data()});
  }
  const std::string again = checkpoint::EncodeSafetensors(views, metadata);
  std::map<std::string, checkpoint::Tensor> tensors2;
  std::map<std::string, std::string> metadata2;
  FUZZ_CHECK(checkpoint::DecodeSafetensors(again, &tensors2, &metadata2).ok());
  FUZZ_CHECK(metadata2 == metadata);
  FUZZ_CHECK(tensors2.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    const checkpoint::Tensor& u = tensors2.at(name);
    FUZZ_CHECK(u.shape == t.shape);
    // Bit for bit, NaN payloads included.
    FUZZ_CHECK(u.data.size() == t.data.size() &&
               (t.data.empty() || std::memcmp(u.data.data(), t.data.data(), t.data.size() * sizeof(float)) == 0));
  }
  return 0;
}
