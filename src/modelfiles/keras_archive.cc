#include "modelfiles/keras_archive.h"

#include <nlohmann/json.hpp>

#include "env/file_util.h"
#include "modelfiles/hdf5_file.h"
#include "modelfiles/keras3_config.h"
#include "modelfiles/keras3_layout.h"
#include "modelfiles/zip_file.h"

namespace ringtrain::modelfiles {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = uint64_t{64} << 20;  // a model config, however many layers

std::string DateSaved(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

}  // namespace

StatusOr<ModelFile> DecodeKerasArchive(const std::string& bytes, const std::string& path,
                                       const std::vector<std::string>* model_weight_names) {
  const std::string what = "the Keras archive '" + path + "'";
  auto fail = [&](const Status& s, const std::string& todo) {
    return Status(s.code(), "cannot read " + what + ": " + s.message() + "; " + todo).About(Subject::kStorage);
  };
  const std::string save_again = "save the model again with model.save(\"x.keras\") and copy the whole file";
  auto zip = ZipReader::Open(bytes, "the archive");
  if (!zip.ok()) return fail(zip.status(), save_again);
  if (!zip->Has("model.weights.h5") && zip->Has("model.weights.npz")) {
    return UnimplementedError(what + " holds its weights as model.weights.npz; ringtrain reads the default "
                              "model.weights.h5: save it with model.save(\"x.keras\") (weights_format \"h5\")")
        .About(Subject::kStorage);
  }
  auto config_text = zip->Read("config.json", kMaxConfigBytes);
  if (!config_text.ok()) return fail(config_text.status(), save_again);
  const json config = json::parse(*config_text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return fail(DataLossError("config.json is not JSON"), save_again);
  }
  auto h5_bytes = zip->Read("model.weights.h5", bytes.size() * 4 + (1 << 20));
  if (!h5_bytes.ok()) return fail(h5_bytes.status(), save_again);
  auto h5 = H5File::OpenImage(*h5_bytes, "model.weights.h5");
  if (!h5.ok()) return fail(h5.status(), save_again);
  ModelFile out;
  out.config_json = std::move(config_text).value();
  auto tensors = ReadKeras3Weights(**h5, config, model_weight_names, h5_bytes->size() / sizeof(float) + 1);
  if (!tensors.ok()) return fail(tensors.status(), "give the archive Keras wrote for this model");
  out.tensors = std::move(tensors).value();
  return out;
}

StatusOr<std::string> ReadKerasArchiveConfig(const std::string& path, uint64_t max_bytes) {
  auto bytes = ReadFile(path, max_bytes, "a Keras archive");
  if (!bytes.ok()) return bytes.status().WithContext("cannot read the Keras archive").About(Subject::kStorage);
  const std::string what = "the Keras archive '" + path + "'";
  const std::string save_again = "save the model again with model.save(\"x.keras\") and copy the whole file";
  auto zip = ZipReader::Open(*bytes, "the archive");
  if (!zip.ok()) {
    return Status(zip.status().code(), "cannot read " + what + ": " + zip.status().message() + "; " + save_again)
        .About(Subject::kStorage);
  }
  auto config_text = zip->Read("config.json", kMaxConfigBytes);
  if (!config_text.ok()) {
    return Status(config_text.status().code(),
                  "cannot read " + what + ": " + config_text.status().message() + "; " + save_again)
        .About(Subject::kStorage);
  }
  return config_text;
}

StatusOr<ModelFile> ReadKerasArchive(const std::string& path, const std::vector<std::string>* model_weight_names,
                                     uint64_t max_bytes) {
  auto bytes = ReadFile(path, max_bytes, "a Keras archive");
  if (!bytes.ok()) return bytes.status().WithContext("cannot read the Keras archive").About(Subject::kStorage);
  return DecodeKerasArchive(*bytes, path, model_weight_names);
}

StatusOr<std::string> EncodeKerasArchive(const KerasArchiveInput& input) {
  const json config = json::parse(input.config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return InvalidArgumentError("the model config to write into a .keras archive is not a JSON object");
  }
  RT_ASSIGN_OR_RETURN(auto h5, H5File::CreateInMemory("model.weights.h5"));
  RT_RETURN_IF_ERROR(WriteKeras3Weights(h5.get(), config, input.tensors, &input.weight_order));
  RT_ASSIGN_OR_RETURN(std::string weights, h5->Image());
  h5.reset();
  const json metadata = {{"keras_version", input.keras_version}, {"date_saved", DateSaved(input.saved_at)}};
  return BuildZip({{"metadata.json", metadata.dump()}, {"config.json", input.config_json}, {"model.weights.h5", weights}},
                  input.saved_at);
}

Status WriteKerasArchive(const std::string& path, const KerasArchiveInput& input, env::Env* env) {
  RT_ASSIGN_OR_RETURN(std::string bytes, EncodeKerasArchive(input));
  return env::WriteFileAtomically(env, path, bytes);
}

Status WriteKerasModel(const std::string& path, const json& compact_model,
                       const std::vector<checkpoint::TensorView>& weights, std::time_t saved_at, env::Env* env) {
  RT_ASSIGN_OR_RETURN(json config, Keras3ConfigFromCompact(compact_model));
  KerasArchiveInput in;
  in.config_json = config.dump();
  in.saved_at = saved_at;
  for (const checkpoint::TensorView& w : weights) {
    checkpoint::Tensor& t = in.tensors[w.name];
    t.shape = w.shape;
    size_t count = 1;
    for (int64_t d : w.shape) count *= static_cast<size_t>(d);
    t.data.assign(w.data, w.data + count);
    in.weight_order.push_back(w.name);
  }
  return WriteKerasArchive(path, in, env);
}

}  // namespace ringtrain::modelfiles
