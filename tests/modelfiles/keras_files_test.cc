// Keras' weight files -- Keras 3 .keras archives, Keras 2 (and Keras 3 legacy) .h5 files --
// written by keras_files.py in the layouts Keras' saving code writes, read into ringtrain's
// "<layer>/<weight>" names; the .keras archive ringtrain writes, checked by h5py and
// zipfile; and one clear storage error for each broken file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "config/job_config.h"
#include "env/file_util.h"
#include "inference/saved_model.h"
#include "inference/weights_by_name.h"
#include "modelfiles/hdf5_file.h"
#include "modelfiles/keras3_config.h"
#include "modelfiles/keras3_layout.h"
#include "modelfiles/keras_archive.h"
#include "modelfiles/weights_file.h"
#include "modelfiles/zip_file.h"
#include "nn/keras/keras_json.h"
#include "test_model.h"
#include "testing/temp_dir.h"

namespace ringtrain::modelfiles {
namespace {

using ringtrain::testing::TempDir;

// Writes a file of `kind` (keras_files.py) for the test model; "" on failure.
std::string WriteKerasFile(const TempDir& dir, const std::string& kind, const std::string& name,
                           std::string* config_path = nullptr) {
  auto model = BuildTestModel();
  const std::string spec = dir.path() + "/spec.json";
  WriteSpec(*model, spec);
  const std::string out = dir.path() + "/" + name;
  std::string cmd = std::string(kPython) + " " + KerasFilesScript() + " write " + kind + " " + spec + " " + out;
  if (config_path != nullptr) {
    *config_path = dir.path() + "/config.json";
    cmd += " " + *config_path;
  }
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectTestTensors(const std::map<std::string, checkpoint::Tensor>& got) {
  auto model = BuildTestModel();
  const auto want = TestTensors(*model);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, t] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << "no tensor " << name;
    EXPECT_EQ(it->second.shape, t.shape) << name;
    EXPECT_EQ(it->second.data, t.data) << name;
  }
}

TEST(KerasArchiveTest, ReadsEachLayerFromItsKerasPath) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras3_archive", "model.keras");
  auto file = ReadKerasArchive(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  // Conv2D c3 is "conv2d_1" and the nested Sequential's layers "sequential/layers/...":
  // read by class and position, named by the config's layer names.
  ExpectTestTensors(file->tensors);
  const auto config = nlohmann::json::parse(file->config_json);
  EXPECT_EQ(config["class_name"], "Functional");
}

TEST(KerasArchiveTest, LoadsAsInitialWeightsAndAsTheModelFile) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras3_archive", "model.keras");
  auto model = BuildTestModel();
  auto report = inference::LoadInitialWeights(model.get(), path, false, kDefaultMaxFileBytes);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded.size(), model->param_infos().size());
  EXPECT_TRUE(report->kept.empty());
  const auto want = TestTensors(*model);
  for (const nn::ParamInfo& p : model->param_infos()) {
    EXPECT_EQ(std::memcmp(model->params() + p.offset, want.at(p.name).data.data(), p.count * sizeof(float)), 0)
        << p.name;
  }

  config::JobConfig job;
  job.model = TestModelJson();
  job.seed = 77;
  auto loaded = inference::LoadModel(job, path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(std::memcmp((*loaded)->params(), model->params(), model->num_params() * sizeof(float)), 0);
}

TEST(KerasH5Test, Keras2ModelSaveWithANestedModel) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras2_nested", "model.h5");
  auto model = BuildTestModel();
  const auto names = WeightNames(*model);
  auto file = ReadWeightsFile(path, &names, kDefaultMaxFileBytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  // The nested Sequential "block" gives its inner layers' names ("c2/kernel:0" -> "c2/kernel").
  ExpectTestTensors(file->tensors);
  EXPECT_NE(file->config_json.find("test_model"), std::string::npos) << "model.save's model_config attribute";
}

// evaluate and predict --model take the .h5 too: every weight, exactly.
TEST(KerasH5Test, LoadsAsTheModelFile) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras2_nested", "model.h5");
  config::JobConfig job;
  job.model = TestModelJson();
  job.seed = 8;
  auto loaded = inference::LoadModel(job, path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const auto want = TestTensors(**loaded);
  for (const nn::ParamInfo& p : (*loaded)->param_infos()) {
    EXPECT_EQ(std::memcmp((*loaded)->params() + p.offset, want.at(p.name).data.data(), p.count * sizeof(float)), 0)
        << p.name;
  }
  // A model the file does not fit: the exact loader names the disagreement, exit 6.
  job.model["layers"][8]["units"] = 3;
  auto wrong = inference::LoadModel(job, path);
  ASSERT_EQ(wrong.status().code(), Code::kFailedPrecondition) << wrong.status().ToString();
  EXPECT_EQ(wrong.status().subject(), Subject::kStorage);
  EXPECT_NE(wrong.status().message().find("head/"), std::string::npos) << wrong.status().message();
}

TEST(KerasH5Test, Keras3LegacyH5WithScopedPathsAndDepthwiseKernel) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  // Keras 3's model.save("x.h5"): "block/c2/kernel" and DepthwiseConv2D's "dw/kernel".
  const std::string path = WriteKerasFile(dir, "keras3_legacy_h5", "model.h5");
  auto model = BuildTestModel();
  const auto names = WeightNames(*model);
  auto file = ReadWeightsFile(path, &names, kDefaultMaxFileBytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ExpectTestTensors(file->tensors);
}

TEST(KerasH5Test, Keras2SaveWeightsWithChunkedLayerNamesAndVariableLengthStrings) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras2_flat", "weights.h5");
  // Without the model's names: the file's own, ":0" dropped.
  auto file = ReadWeightsFile(path, nullptr, kDefaultMaxFileBytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ExpectTestTensors(file->tensors);
  auto model = BuildTestModel();
  auto report = inference::LoadInitialWeights(model.get(), path, false, kDefaultMaxFileBytes);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded.size(), model->param_infos().size());
}

TEST(KerasH5Test, Keras3WeightsOnlyFileAsksForTheArchive) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string path = WriteKerasFile(dir, "keras3_weights_h5", "model.weights.h5");
  auto file = ReadWeightsFile(path, nullptr, kDefaultMaxFileBytes);
  ASSERT_EQ(file.status().code(), Code::kUnimplemented) << file.status().ToString();
  EXPECT_EQ(file.status().subject(), Subject::kStorage);
  EXPECT_NE(file.status().message().find(".keras"), std::string::npos) << file.status().message();
  EXPECT_NE(file.status().message().find(path), std::string::npos) << file.status().message();
}

TEST(KerasH5Test, AnHdf5FileKerasDidNotWriteIsDataLoss) {
  TempDir dir;
  auto h5 = H5File::CreateInMemory("x.h5");
  ASSERT_TRUE(h5.ok());
  ASSERT_TRUE((*h5)->CreateGroup("something/else").ok());
  auto image = (*h5)->Image();
  ASSERT_TRUE(image.ok());
  const std::string path = dir.path() + "/x.h5";
  ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, *image).ok());
  auto file = ReadWeightsFile(path, nullptr, kDefaultMaxFileBytes);
  ASSERT_EQ(file.status().code(), Code::kDataLoss) << file.status().ToString();
  EXPECT_EQ(file.status().subject(), Subject::kStorage);
  EXPECT_NE(file.status().message().find("layer_names"), std::string::npos) << file.status().message();
}

KerasArchiveInput ArchiveOfTestModel(const std::string& config_path) {
  auto model = BuildTestModel();
  KerasArchiveInput in;
  in.config_json = Slurp(config_path);
  in.tensors = TestTensors(*model);
  in.weight_order = WeightNames(*model);
  in.saved_at = 1714564800;  // 2024-05-01 12:00:00 UTC
  return in;
}

TEST(KerasArchiveWriterTest, WritesWhatKerasReads) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  std::string config_path;
  WriteKerasFile(dir, "keras3_archive", "unused.keras", &config_path);
  const KerasArchiveInput in = ArchiveOfTestModel(config_path);
  const std::string path = dir.path() + "/written.keras";
  ASSERT_TRUE(WriteKerasArchive(path, in).ok());
  // h5py and zipfile find every variable at Keras 3's path with its value.
  const std::string cmd = std::string(kPython) + " " + KerasFilesScript() + " check_archive " + dir.path() +
                          "/spec.json " + path + " " + config_path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  // ringtrain reads it back; equal inputs make equal bytes.
  auto back = ReadKerasArchive(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectTestTensors(back->tensors);
  auto again = EncodeKerasArchive(in);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, Slurp(path));
  auto zip = ZipReader::Open(*again, "written.keras");
  ASSERT_TRUE(zip.ok());
  auto meta = zip->Read("metadata.json", 1 << 20);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(nlohmann::json::parse(*meta)["date_saved"], "2024-05-01@12:00:00");
}

TEST(KerasArchiveWriterTest, AWeightTheModelLacksIsInvalidArgument) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  std::string config_path;
  WriteKerasFile(dir, "keras3_archive", "unused.keras", &config_path);
  KerasArchiveInput in = ArchiveOfTestModel(config_path);
  in.tensors.erase("bn/moving_variance");
  auto bytes = EncodeKerasArchive(in);
  ASSERT_EQ(bytes.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("bn/moving_variance"), std::string::npos) << bytes.status().message();
}

// An archive of the members of the one keras_files.py wrote, some changed.
std::string RebuiltArchive(const std::string& path, bool drop_weights, size_t keep_weight_bytes) {
  const std::string bytes = Slurp(path);
  auto zip = ZipReader::Open(bytes, path);
  EXPECT_TRUE(zip.ok());
  std::vector<std::pair<std::string, std::string>> members;
  for (const std::string& name : zip->Names()) {
    auto content = zip->Read(name, 1 << 30);
    EXPECT_TRUE(content.ok());
    if (name == "model.weights.h5") {
      if (drop_weights) continue;
      content->resize(std::min(content->size(), keep_weight_bytes));
    }
    members.emplace_back(name, *content);
  }
  auto out = BuildZip(members, 0);
  EXPECT_TRUE(out.ok());
  return *out;
}

void ExpectStorageError(const StatusOr<ModelFile>& r, Code code, const std::string& path, const std::string& also) {
  ASSERT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_EQ(r.status().subject(), Subject::kStorage) << "a bad weights file: exit code 6";
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(also), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(KerasArchiveTest, MissingWeightsMemberIsDataLoss) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string good = WriteKerasFile(dir, "keras3_archive", "model.keras");
  const std::string path = dir.path() + "/no_weights.keras";
  ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, RebuiltArchive(good, true, 0)).ok());
  ExpectStorageError(ReadKerasArchive(path), Code::kDataLoss, path, "model.weights.h5");
}

TEST(KerasArchiveTest, TruncatedWeightsMemberIsDataLoss) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string good = WriteKerasFile(dir, "keras3_archive", "model.keras");
  for (size_t keep : {size_t{0}, size_t{6}, size_t{600}, size_t{3000}}) {
    const std::string path = dir.path() + "/cut" + std::to_string(keep) + ".keras";
    ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, RebuiltArchive(good, false, keep)).ok());
    ExpectStorageError(ReadKerasArchive(path), Code::kDataLoss, path, "model.weights.h5");
  }
}

TEST(KerasArchiveTest, TruncatedArchiveIsDataLoss) {
  RT_REQUIRE_H5PY();
  TempDir dir;
  const std::string good = Slurp(WriteKerasFile(dir, "keras3_archive", "model.keras"));
  const std::string path = dir.path() + "/cut.keras";
  ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, good.substr(0, good.size() / 2)).ok());
  auto r = ReadWeightsFile(path, nullptr, kDefaultMaxFileBytes);
  ExpectStorageError(r, Code::kDataLoss, path, "zip");
  // Through the loaders too, leaving the model as it was.
  auto model = BuildTestModel();
  const std::vector<float> before(model->params(), model->params() + model->num_params());
  auto report = inference::LoadInitialWeights(model.get(), path, false, kDefaultMaxFileBytes);
  EXPECT_EQ(report.status().subject(), Subject::kStorage) << report.status().ToString();
  EXPECT_EQ(std::memcmp(model->params(), before.data(), before.size() * sizeof(float)), 0);
}

// The order of a layer's variables in Keras (keras3_layout.h's table) is the order of its
// weights in nn::Model's ParamInfo list, for every layer class with weights and the
// arguments that drop one.
TEST(Keras3LayoutTest, VariableOrderIsTheModelsParamInfoOrder) {
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"Dense", {{"units", 3}}},
      {"Dense", {{"units", 3}, {"use_bias", false}}},
      {"Conv2D", {{"filters", 3}, {"kernel_size", 3}}},
      {"Conv2D", {{"filters", 3}, {"kernel_size", 3}, {"use_bias", false}}},
      {"DepthwiseConv2D", {{"kernel_size", 3}}},
      {"DepthwiseConv2D", {{"kernel_size", 3}, {"use_bias", false}}},
      {"SeparableConv2D", {{"filters", 3}, {"kernel_size", 3}}},
      {"SeparableConv2D", {{"filters", 3}, {"kernel_size", 3}, {"use_bias", false}}},
      {"Conv2DTranspose", {{"filters", 3}, {"kernel_size", 3}}},
      {"Conv2DTranspose", {{"filters", 3}, {"kernel_size", 3}, {"use_bias", false}}},
      {"BatchNormalization", nlohmann::json::object()},
      {"BatchNormalization", {{"center", false}}},
      {"BatchNormalization", {{"scale", false}}},
      {"LayerNormalization", nlohmann::json::object()},
      {"LayerNormalization", {{"center", false}}},
      {"LayerNormalization", {{"scale", false}}},
  };
  for (const auto& [cls, args] : cases) {
    nlohmann::json layer = args;
    layer["type"] = cls;
    layer["name"] = "x";
    const nlohmann::json input = cls == "Dense" ? nlohmann::json::array({6}) : nlohmann::json::array({5, 5, 2});
    // json::array: a braced list of one json is a copy of it under clang, an array under gcc.
    nlohmann::json layers = nlohmann::json::array({layer});
    if (cls != "Dense") {  // a model ends in one value per class
      layers.push_back({{"type", "Flatten"}, {"name", "f"}});
      layers.push_back({{"type", "Dense"}, {"name", "out"}, {"units", 2}});
    }
    auto model = nn::Model::FromJson({{"input_shape", input}, {"layers", layers}}, 1);
    ASSERT_TRUE(model.ok()) << cls << " " << args.dump() << ": " << model.status().ToString();
    std::vector<std::string> have;
    for (const nn::ParamInfo& p : (*model)->param_infos()) {
      if (p.name.compare(0, 2, "x/") == 0) have.push_back(p.name.substr(2));
    }
    auto want = Keras3VariableNames(cls, args);
    ASSERT_TRUE(want.has_value()) << cls;
    EXPECT_EQ(*want, have) << cls << " " << args.dump();
  }
}

TEST(Keras3LayoutTest, SnakeCaseIsKeras) {
  EXPECT_EQ(SnakeCase("Conv2D"), "conv2d");
  EXPECT_EQ(SnakeCase("DepthwiseConv2D"), "depthwise_conv2d");
  EXPECT_EQ(SnakeCase("SeparableConv2D"), "separable_conv2d");
  EXPECT_EQ(SnakeCase("BatchNormalization"), "batch_normalization");
  EXPECT_EQ(SnakeCase("GlobalAveragePooling2D"), "global_average_pooling2d");
  EXPECT_EQ(SnakeCase("ReLU"), "re_lu");
  EXPECT_EQ(SnakeCase("InputLayer"), "input_layer");
  EXPECT_EQ(SnakeCase("Functional"), "functional");
}

TEST(WeightsFileTest, FormatsAreToldApartByTheirFirstBytes) {
  EXPECT_EQ(DetectWeightsFormat(std::string("PK\x03\x04rest", 8), 100), WeightsFormat::kKerasArchive);
  EXPECT_EQ(DetectWeightsFormat(std::string("\x89HDF\r\n\x1a\n", 8), 100), WeightsFormat::kHdf5);
  EXPECT_EQ(DetectWeightsFormat("  {\"format\": \"layers-model\"", 1000), WeightsFormat::kTfjs);
  // A safetensors header of 123 bytes begins with '{' too.
  std::string st(8, '\0');
  st[0] = '{';
  st += "{\"a\": 1}";
  EXPECT_EQ(DetectWeightsFormat(st, 8 + 123), WeightsFormat::kSafetensors);
  EXPECT_EQ(DetectWeightsFormat(std::string("\x10\0\0\0\0\0\0\0{", 9), 100), WeightsFormat::kSafetensors);
}

}  // namespace
}  // namespace ringtrain::modelfiles

namespace ringtrain::modelfiles {
namespace {

// The compact model as a Keras 3 Functional config: Keras' classes, the model's layer names
// (auto-named ones too), the graph as inbound nodes; and an archive of it read back whole.
TEST(Keras3ConfigTest, CompactModelBecomesAFunctionalConfig) {
  auto config = Keras3ConfigFromCompact(TestModelJson());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ((*config)["class_name"], "Functional");
  const auto& layers = (*config)["config"]["layers"];
  ASSERT_EQ(layers.size(), 10u);
  EXPECT_EQ(layers[0]["class_name"], "InputLayer");
  EXPECT_EQ(layers[0]["config"]["batch_shape"], nlohmann::json({nullptr, 6, 6, 2}));
  EXPECT_EQ(layers[2]["class_name"], "DepthwiseConv2D");
  EXPECT_EQ(layers[2]["inbound_nodes"][0]["args"][0]["config"]["keras_history"], nlohmann::json({"c1", 0, 0}));
  EXPECT_EQ(layers[5]["config"]["use_bias"], false);
  EXPECT_EQ((*config)["config"]["output_layers"], nlohmann::json({"head", 0, 0}));
  auto paths = Keras3Layers(*config);
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  std::vector<std::string> got;
  for (const Keras3Layer& l : *paths) got.push_back(l.path + "=" + l.name);
  EXPECT_EQ(got, (std::vector<std::string>{"layers/input_layer=input", "layers/conv2d=c1",
                                           "layers/depthwise_conv2d=dw", "layers/conv2d_1=c2",
                                           "layers/batch_normalization=bn", "layers/conv2d_2=c3",
                                           "layers/separable_conv2d=sep", "layers/layer_normalization=ln",
                                           "layers/flatten=flat", "layers/dense=head"}));

  TempDir dir;
  auto model = BuildTestModel();
  const auto tensors = TestTensors(*model);
  std::vector<checkpoint::TensorView> views;
  for (const nn::ParamInfo& p : model->param_infos()) views.push_back({p.name, p.shape, tensors.at(p.name).data.data()});
  const std::string path = dir.path() + "/model.keras";
  ASSERT_TRUE(WriteKerasModel(path, TestModelJson(), views, 0).ok());
  auto back = ReadKerasArchive(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectTestTensors(back->tensors);
  EXPECT_EQ(nlohmann::json::parse(back->config_json), *config);
}

TEST(Keras3ConfigTest, AutoNamesAndMergeInputsAreTheModels) {
  const auto compact = nlohmann::json::parse(R"({"input_shape": [4], "layers": [
      {"type": "dense", "units": 3},
      {"type": "dense", "units": 3, "name": "dense_1_x", "inputs": ["input"]},
      {"type": "add", "inputs": ["dense", "dense_1_x"]},
      {"type": "dense", "units": 2}]})");
  auto model = nn::Model::FromJson(compact, 1);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto config = Keras3ConfigFromCompact(compact);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  std::set<std::string> layer_names;
  for (const auto& l : (*config)["config"]["layers"]) layer_names.insert(l["name"].get<std::string>());
  for (const nn::ParamInfo& p : (*model)->param_infos()) {
    EXPECT_TRUE(layer_names.count(p.name.substr(0, p.name.find('/')))) << p.name;
  }
  const auto& add = (*config)["config"]["layers"][3];
  EXPECT_EQ(add["class_name"], "Add");
  ASSERT_EQ(add["inbound_nodes"][0]["args"].size(), 1u) << "a merge layer takes one list";
  EXPECT_EQ(add["inbound_nodes"][0]["args"][0].size(), 2u);
  EXPECT_EQ(add["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"][0], "dense_1_x");
}

// A model with two inputs and two outputs: one InputLayer per input and lists of references
// in input_layers and output_layers, as Keras 3 writes them; ringtrain's own reader takes
// the config back to the same inputs, outputs and weights.
TEST(Keras3ConfigTest, SeveralInputsAndOutputsRoundTrip) {
  const auto compact = nlohmann::json::parse(R"({"inputs": [{"name": "pixels", "shape": [4, 4, 1]},
      {"name": "extra", "shape": [3]}], "outputs": ["a", "b"], "layers": [
      {"type": "flatten", "name": "flat", "inputs": ["pixels"]},
      {"type": "concatenate", "name": "joined", "inputs": ["flat", "extra"]},
      {"type": "dense", "name": "a", "units": 2},
      {"type": "dense", "name": "b", "units": 1, "inputs": ["joined"]}]})");
  auto config = Keras3ConfigFromCompact(compact);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto& c = (*config)["config"];
  EXPECT_EQ(c["layers"][0]["class_name"], "InputLayer");
  EXPECT_EQ(c["layers"][1]["name"], "extra");
  EXPECT_EQ(c["layers"][1]["config"]["batch_shape"], nlohmann::json({nullptr, 3}));
  EXPECT_EQ(c["input_layers"], nlohmann::json::parse(R"([["pixels", 0, 0], ["extra", 0, 0]])"));
  EXPECT_EQ(c["output_layers"], nlohmann::json::parse(R"([["a", 0, 0], ["b", 0, 0]])"));
  auto back = nn::KerasJsonToCompact(*config);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)["inputs"], compact["inputs"]);
  EXPECT_EQ((*back)["outputs"], compact["outputs"]);
  auto original = nn::Model::FromJson(compact, 1);
  auto read = nn::Model::FromJson(*back, 1);
  ASSERT_TRUE(original.ok() && read.ok()) << read.status().ToString();
  ASSERT_EQ((*original)->param_infos().size(), (*read)->param_infos().size());
  for (size_t i = 0; i < (*read)->param_infos().size(); ++i) {
    EXPECT_EQ((*original)->param_infos()[i].name, (*read)->param_infos()[i].name);
    EXPECT_EQ((*original)->param_infos()[i].shape, (*read)->param_infos()[i].shape);
  }
}

// Every layer type of the compact form has its Keras class in the archive's config: the
// merge layers beyond Add, Multiply and Concatenate take their inputs as one list too.
TEST(Keras3ConfigTest, EveryMergeLayerRoundTrips) {
  for (const char* type : {"subtract", "average", "maximum", "minimum"}) {
    SCOPED_TRACE(type);
    nlohmann::json compact = nlohmann::json::parse(R"({"inputs": [{"name": "a", "shape": [3]}, {"name": "b", "shape": [3]}],
        "layers": [{"type": "dense", "name": "da", "units": 2, "inputs": ["a"]},
                   {"type": "dense", "name": "db", "units": 2, "inputs": ["b"]},
                   {"name": "merged", "inputs": ["da", "db"]},
                   {"type": "dense", "name": "out", "units": 1}]})");
    compact["layers"][2]["type"] = type;
    auto config = Keras3ConfigFromCompact(compact);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_EQ((*config)["config"]["layers"][4]["inbound_nodes"][0]["args"].size(), 1u) << "one list of tensors";
    auto back = nn::KerasJsonToCompact(*config);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    auto model = nn::Model::FromJson(*back, 1);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
  }
}

// A layer called twice is one layer with two inbound nodes, the second call referred to as
// [layer, 1, 0], as Keras 3 writes a shared layer; it reads back to one set of weights.
TEST(Keras3ConfigTest, ASharedLayerIsOneLayerWithTwoCalls) {
  const auto compact = nlohmann::json::parse(R"({"inputs": [{"name": "left", "shape": [4]},
      {"name": "right", "shape": [4]}], "layers": [
      {"type": "dense", "name": "enc", "units": 3, "inputs": ["left"]},
      {"shares": "enc", "name": "enc_again", "inputs": ["right"]},
      {"type": "concatenate", "name": "joined", "inputs": ["enc", "enc_again"]},
      {"type": "dense", "name": "out", "units": 1}]})");
  auto config = Keras3ConfigFromCompact(compact);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const auto& layers = (*config)["config"]["layers"];
  ASSERT_EQ(layers.size(), 5u) << layers.dump();  // left, right, enc, joined, out
  EXPECT_EQ(layers[2]["name"], "enc");
  ASSERT_EQ(layers[2]["inbound_nodes"].size(), 2u);
  EXPECT_EQ(layers[2]["inbound_nodes"][1]["args"][0]["config"]["keras_history"], nlohmann::json({"right", 0, 0}));
  EXPECT_EQ(layers[3]["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"], nlohmann::json({"enc", 1, 0}));
  auto back = nn::KerasJsonToCompact(*config);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  auto original = nn::Model::FromJson(compact, 1);
  auto read = nn::Model::FromJson(*back, 1);
  ASSERT_TRUE(original.ok() && read.ok()) << read.status().ToString() << " " << back->dump();
  EXPECT_EQ((*read)->num_params(), (*original)->num_params());
  EXPECT_EQ((*read)->param_infos().size(), 4u);
}

}  // namespace
}  // namespace ringtrain::modelfiles

namespace ringtrain::modelfiles {
namespace {

// A Sequential model's config lists its InputLayer, but Sequential.layers (what Keras saves)
// leaves it out; classes are numbered per class.
TEST(Keras3LayoutTest, SequentialLeavesItsInputLayerOut) {
  const auto config = nlohmann::json::parse(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"name": "in", "batch_shape": [null, 4]}},
      {"class_name": "Dense", "config": {"name": "a", "units": 3}},
      {"class_name": "Dropout", "config": {"name": "d", "rate": 0.5}},
      {"class_name": "Dense", "config": {"name": "b", "units": 2, "use_bias": false}}]}})");
  auto layers = Keras3Layers(config);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  std::vector<std::string> got;
  for (const Keras3Layer& l : *layers) got.push_back(l.path + "=" + l.name);
  EXPECT_EQ(got, (std::vector<std::string>{"layers/dense=a", "layers/dropout=d", "layers/dense_1=b"}));
  EXPECT_EQ(*Keras3VariableNames("Dense", (*layers)[2].config), std::vector<std::string>{"kernel"});
  EXPECT_FALSE(Keras3VariableNames("LSTM", nlohmann::json::object()).has_value());
  EXPECT_EQ(Keras3Layers(nlohmann::json::parse(R"({"class_name": "Dense", "config": {}})")).status().code(),
            Code::kDataLoss);
}

}  // namespace
}  // namespace ringtrain::modelfiles
