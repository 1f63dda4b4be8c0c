// The safetensors file helpers: encoding plus a crash-safe write, a read plus decoding.
#include <set>

#include "checkpoint/safetensors.h"
#include "env/file_util.h"

namespace ringtrain::checkpoint {

Status SaveSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata, env::Env* env) {
  std::set<std::string> names;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      return InvalidArgumentError("cannot save '" + path + "': tensor name '" + t.name +
                                  "' is empty, reserved or repeated; names must be unique");
    }
    int64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) {
        return InvalidArgumentError("cannot save '" + path + "': tensor '" + t.name + "' has a negative dimension");
      }
      elements *= d;
    }
    if (elements > 0 && t.data == nullptr) {
      return InvalidArgumentError("cannot save '" + path + "': tensor '" + t.name + "' has no data");
    }
  }
  return env::WriteFileAtomically(env, path, EncodeSafetensors(tensors, metadata)).About(Subject::kStorage);
}

Status LoadSafetensors(const std::string& path, std::map<std::string, Tensor>* tensors,
                       std::map<std::string, std::string>* metadata, env::Env* env) {
  StatusOr<std::string> bytes = env->ReadFile(path);
  if (!bytes.ok()) return bytes.status().About(Subject::kStorage);
  Status s = DecodeSafetensors(*bytes, tensors, metadata);
  if (!s.ok()) return s.WithContext("checkpoint '" + path + "'").About(Subject::kStorage);
  return Status::Ok();
}

}  // namespace ringtrain::checkpoint
