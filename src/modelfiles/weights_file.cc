#include "modelfiles/weights_file.h"

#include <set>

#include "checkpoint/safetensors.h"
#include "common/file.h"
#include "modelfiles/hdf5_file.h"
#include "modelfiles/keras_archive.h"
#include "modelfiles/keras_h5.h"
#include "modelfiles/tfjs_weights.h"
#include "modelfiles/zip_file.h"

namespace ringtrain::modelfiles {

// A model.json is far smaller than its shards: its bound.
constexpr uint64_t kMaxTfjsJsonBytes = uint64_t{64} << 20;

WeightsFormat DetectWeightsFormat(const std::string& head, uint64_t size) {
  if (head.compare(0, 4, kZipMagic, 4) == 0) return WeightsFormat::kKerasArchive;
  if (head.compare(0, 8, kHdf5Magic, 8) == 0) return WeightsFormat::kHdf5;
  // A safetensors file starts with its header's length (8 bytes, little-endian), then the
  // header's '{'. Its first byte can be '{' too (a length of 123), so that is checked first.
  if (head.size() > 8 && head[8] == '{') {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(head[i]);
    if (n <= size - 8) return WeightsFormat::kSafetensors;
  }
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && head[first] == '{') return WeightsFormat::kTfjs;
  return WeightsFormat::kSafetensors;
}

const char* WeightsFormatName(WeightsFormat format) {
  switch (format) {
    case WeightsFormat::kSafetensors: return "a safetensors file";
    case WeightsFormat::kKerasArchive: return "a Keras archive (.keras)";
    case WeightsFormat::kHdf5: return "a Keras HDF5 file (.h5)";
    case WeightsFormat::kTfjs: return "a TensorFlow.js model.json";
  }
  return "a weights file";
}

StatusOr<ModelFile> ReadWeightsFile(const std::string& path, const std::vector<std::string>* model_weight_names,
                                    uint64_t max_bytes) {
  uint64_t size = 0;
  auto head = ReadFilePrefix(path, 16, &size);
  if (!head.ok()) return head.status().WithContext("cannot read the weights file").About(Subject::kStorage);
  const WeightsFormat format = DetectWeightsFormat(*head, size);
  const uint64_t bound = format == WeightsFormat::kTfjs ? std::min(max_bytes, kMaxTfjsJsonBytes) : max_bytes;
  if (size > bound) {
    return InvalidArgumentError("the weights file '" + path + "' (" + WeightsFormatName(format) + ") is " +
                                FormatBytes(size) + ", more than the " + FormatBytes(bound) +
                                " this model's weights can need; give the file of this model")
        .About(Subject::kStorage);
  }
  switch (format) {
    case WeightsFormat::kKerasArchive: return ReadKerasArchive(path, model_weight_names, bound);
    case WeightsFormat::kHdf5: {
      auto file = H5File::OpenPath(path, "'" + path + "'");
      if (!file.ok()) {
        return file.status().WithContext("cannot read the Keras HDF5 file (copy it again, whole)")
            .About(Subject::kStorage);
      }
      return ReadKerasH5(**file, path, model_weight_names, bound / sizeof(float) + 1);
    }
    case WeightsFormat::kTfjs: {
      auto text = ReadFile(path, bound, "a tfjs model.json");
      if (!text.ok()) return text.status().WithContext("cannot read the tfjs model").About(Subject::kStorage);
      std::set<std::string> names;
      if (model_weight_names != nullptr) names.insert(model_weight_names->begin(), model_weight_names->end());
      return ReadTfjsModel(path, *text, model_weight_names ? &names : nullptr, max_bytes);
    }
    case WeightsFormat::kSafetensors: {
      auto bytes = ReadFile(path, bound, "a safetensors file");
      if (!bytes.ok()) return bytes.status().WithContext("cannot read the weights file").About(Subject::kStorage);
      ModelFile out;
      Status st = checkpoint::DecodeSafetensors(*bytes, &out.tensors, nullptr);
      if (!st.ok()) {
        return st.WithContext("cannot load '" + path + "' (a safetensors file of float32 tensors)")
            .About(Subject::kStorage);
      }
      return out;
    }
  }
  return InternalError("unknown weights format");
}

}  // namespace ringtrain::modelfiles
