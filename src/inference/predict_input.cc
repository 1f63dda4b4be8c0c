#include "inference/predict_input.h"

#include <filesystem>

#include "data/shard.h"
#include "data/shard_policy.h"
#include "inference/tensor_checks.h"
#include "numpy/npy.h"

namespace ringtrain::inference {
namespace {

std::string ShapeText(const std::vector<int>& shape) {
  return inference::ShapeText(std::vector<int64_t>(shape.begin(), shape.end()));
}

size_t Product(const std::vector<int>& shape) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  return n;
}

StatusOr<data::Dataset> FromNpy(const std::vector<int>& input_shape, const std::string& path,
                                std::vector<std::string>* names) {
  RT_ASSIGN_OR_RETURN(numpy::NpyArray a, numpy::OpenNpy(path));
  const size_t size = Product(input_shape);
  const auto& shape = a.shape();
  uint64_t per = 1;
  for (size_t i = 1; i < shape.size(); ++i) per *= static_cast<uint64_t>(shape[i]);
  if (shape.size() < 2 || shape[0] < 1 || per != size) {
    return InvalidArgumentError("--input '" + path + "' has shape " + numpy::ShapeString(shape) +
                                " but the model takes [n, " + ShapeText(input_shape).substr(1) +
                                " (n examples of " + std::to_string(size) + " values)")
        .About(Subject::kConfig);
  }
  data::Dataset d;
  d.example_shape = input_shape;
  d.example_size = size;
  d.num_classes = 1;
  const uint64_t n = static_cast<uint64_t>(shape[0]);
  d.images.resize(n * size);
  for (uint64_t k = 0; k < n * size; ++k) d.images[k] = static_cast<float>(a.AsDouble(k));
  d.labels.assign(n, 0);
  for (uint64_t i = 0; i < n; ++i) names->push_back(std::to_string(i));
  return d;
}

// The job's image_folder decoding settings, or the model's input shape's.
StatusOr<nlohmann::json> FolderEntry(const config::JobConfig& job, const std::vector<int>& input_shape,
                                     const std::string& path) {
  nlohmann::json e = {{"format", "image_folder"}, {"directory", path}, {"labels", nullptr}};
  const nlohmann::json& train = job.train_data;
  if (train.is_object() && train.value("format", "") == "image_folder") {
    for (const char* k : {"image_size", "color_mode", "interpolation", "crop_to_aspect_ratio", "rescale"}) {
      if (train.contains(k)) e[k] = train[k];
    }
    return e;
  }
  const bool gray2d = input_shape.size() == 2;  // [height, width]: grayscale, as MNIST's [28, 28]
  if (!gray2d && (input_shape.size() != 3 || (input_shape[2] != 1 && input_shape[2] != 3 && input_shape[2] != 4))) {
    return InvalidArgumentError("--input '" + path + "' is a folder of images but the model's input shape is " +
                                ShapeText(input_shape) + ", not [height, width] or [height, width, 1|3|4]; pass "
                                "an .npy file")
        .About(Subject::kConfig);
  }
  e["image_size"] = {input_shape[0], input_shape[1]};
  const int channels = gray2d ? 1 : input_shape[2];
  e["color_mode"] = channels == 1 ? "grayscale" : channels == 3 ? "rgb" : "rgba";
  return e;
}

}  // namespace

StatusOr<data::Dataset> LoadPredictInput(const config::JobConfig& job, const std::vector<int>& input_shape,
                                         const std::string& path, std::vector<std::string>* names) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return FromNpy(input_shape, path, names);
  RT_ASSIGN_OR_RETURN(nlohmann::json entry, FolderEntry(job, input_shape, path));
  RT_ASSIGN_OR_RETURN(data::Shard shard, data::OpenShard(entry, "", data::ShardPolicy::kOff, 0, 1, "--input"));
  if (shard.spec().size() != Product(input_shape)) {
    return InvalidArgumentError("--input images have " + std::to_string(shard.spec().size()) +
                                " values but the model's input shape " + ShapeText(input_shape) + " needs " +
                                std::to_string(Product(input_shape)))
        .About(Subject::kConfig);
  }
  for (int64_t i : shard.keep) names->push_back(shard.source->Where(i));
  return data::Materialize(shard);
}

}  // namespace ringtrain::inference
