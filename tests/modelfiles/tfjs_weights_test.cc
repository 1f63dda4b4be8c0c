// TensorFlow.js weights: a model.json's manifest and shards, decoded as tfjs-core's
// io.decodeWeights decodes them (checked against tfjs itself where node is installed), the
// names matched to the model's, and one clear storage error per broken model.
#include "modelfiles/tfjs_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "inference/weights_by_name.h"
#include "modelfiles/weights_file.h"
#include "testing/temp_dir.h"
#include "testing/tfjs_oracle.h"

namespace ringtrain::modelfiles {
namespace {

using nlohmann::json;
using ringtrain::testing::TempDir;

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

template <typename T>
void Append(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian host, as tfjs writes
  out->append(b, sizeof(T));
}

std::unique_ptr<nn::Model> TwoDense() {
  auto m = nn::Model::FromJson(json::parse(R"({"input_shape": [4], "layers": [
      {"type": "Dense", "name": "d1", "units": 3}, {"type": "Dense", "name": "d2", "units": 2}]})"),
                               3);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// A model.json for TwoDense with every encoding tfjs defines, names with more scope than
// the model's, and d1/kernel split across two shards of group 1.
struct HandMade {
  json manifest;
  std::string shard1, shard2, shard3;
};

HandMade MakeHandMade() {
  HandMade h;
  std::string g1;
  for (int i = 0; i < 12; ++i) Append(&g1, static_cast<float>(std::sin(i) * 2.5));  // d1/kernel float32
  for (uint8_t q : {0, 7, 255}) Append(&g1, q);                                     // d1/bias uint8
  h.shard1 = g1.substr(0, 20);
  h.shard2 = g1.substr(20);
  std::string g2;
  for (uint16_t q : {0, 1, 300, 65535, 12345, 40000}) Append(&g2, q);  // d2/kernel uint16
  for (uint16_t f : {0x3C00, 0xC001}) Append(&g2, f);                 // d2/bias float16: 1, -2.00195...
  Append(&g2, 42.0f);                                                 // extra/w: not the model's
  h.shard3 = g2;
  h.manifest = json::parse(R"([
    {"paths": ["g1-shard1of2.bin", "g1-shard2of2.bin"], "weights": [
      {"name": "sequential/d1/kernel", "shape": [4, 3], "dtype": "float32"},
      {"name": "sequential/d1/bias", "shape": [3], "dtype": "float32",
       "quantization": {"dtype": "uint8", "scale": 0.0123, "min": -1.1}}]},
    {"paths": ["g2-shard1of1.bin"], "weights": [
      {"name": "model/sequential/d2/kernel", "shape": [3, 2], "dtype": "float32",
       "quantization": {"dtype": "uint16", "scale": 3.1e-5, "min": -0.77}},
      {"name": "d2/bias", "shape": [2], "dtype": "float32", "quantization": {"dtype": "float16"}},
      {"name": "extra/w", "shape": [1], "dtype": "float32"}]}])");
  return h;
}

std::string WriteHandMade(const TempDir& dir, const HandMade& h) {
  WriteBytes(dir.path() + "/g1-shard1of2.bin", h.shard1);
  WriteBytes(dir.path() + "/g1-shard2of2.bin", h.shard2);
  WriteBytes(dir.path() + "/g2-shard1of1.bin", h.shard3);
  const std::string path = dir.path() + "/model.json";
  WriteBytes(path, json{{"format", "layers-model"}, {"modelTopology", {{"a", 1}}},
                        {"weightsManifest", h.manifest}}
                       .dump());
  return path;
}

std::set<std::string> NamesOf(const nn::Model& m) {
  std::set<std::string> s;
  for (const auto& p : m.param_infos()) s.insert(p.name);
  return s;
}

TEST(TfjsWeightsTest, DecodesEveryEncodingAndMatchesScopedNames) {
  TempDir dir;
  const std::string path = WriteHandMade(dir, MakeHandMade());
  auto model = TwoDense();
  const std::set<std::string> names = NamesOf(*model);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto file = ReadTfjsModel(path, text, &names, 1 << 20);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const auto& t = file->tensors;
  ASSERT_EQ(t.size(), 5u);
  ASSERT_TRUE(t.count("d1/kernel") && t.count("d1/bias") && t.count("d2/kernel") && t.count("d2/bias"));
  EXPECT_TRUE(t.count("extra/w")) << "unmatched names are kept for the loader to report";
  EXPECT_EQ(t.at("d1/kernel").shape, (std::vector<int64_t>{4, 3}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t.at("d1/kernel").data[i], static_cast<float>(std::sin(i) * 2.5));
  // q * scale + min in double, rounded once to float32 (JavaScript's arithmetic).
  const uint8_t q8[] = {0, 7, 255};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.at("d1/bias").data[i], static_cast<float>(q8[i] * 0.0123 + -1.1));
  const uint16_t q16[] = {0, 1, 300, 65535, 12345, 40000};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.at("d2/kernel").data[i], static_cast<float>(q16[i] * 3.1e-5 + -0.77));
  EXPECT_EQ(t.at("d2/bias").data, (std::vector<float>{1.0f, -2.001953125f}));
  EXPECT_EQ(file->config_json, "{\"a\":1}");

  // Through the by-name loader: the extra tensor is reported as ignored.
  auto report = inference::LoadInitialWeights(model.get(), path, false, 1 << 20);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->loaded.size(), 4u);
  EXPECT_EQ(report->ignored, (std::vector<std::string>{"extra/w"}));
}

// tfjs' own tf.io.decodeWeights over the same manifest and shards gives the same bits.
TEST(TfjsWeightsTest, DecodingIsTfjsDecodeWeights) {
  RT_REQUIRE_TFJS();
  TempDir dir;
  const std::string path = WriteHandMade(dir, MakeHandMade());
  const std::string cmd = "timeout 120 node " + std::string(RINGTRAIN_TEST_SOURCE_DIR) +
                          "/tests/modelfiles/tfjs_save.js " + RINGTRAIN_TEST_SOURCE_DIR + "/tests/oracle " +
                          dir.path() + " decode";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir.path() + "/expected.json");
  const json expected = json::parse(in);
  auto file = ReadWeightsFile(path, nullptr, 1 << 20);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->tensors.size(), expected.size());
  for (const auto& [name, want] : expected.items()) {
    ASSERT_TRUE(file->tensors.count(name)) << name;
    const auto& got = file->tensors.at(name);
    EXPECT_EQ(got.shape, want["shape"].get<std::vector<int64_t>>()) << name;
    const auto values = want["values"].get<std::vector<double>>();
    ASSERT_EQ(got.data.size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got.data[i], static_cast<float>(values[i])) << name << "[" << i << "]";
  }
}

// A model tfjs saved itself (model.save with a save handler), shards split mid-weight.
TEST(TfjsWeightsTest, ReadsWhatTfjsModelSaveWrites) {
  RT_REQUIRE_TFJS();
  TempDir dir;
  const std::string cmd = "timeout 120 node " + std::string(RINGTRAIN_TEST_SOURCE_DIR) +
                          "/tests/modelfiles/tfjs_save.js " + RINGTRAIN_TEST_SOURCE_DIR + "/tests/oracle " + dir.path();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto model = nn::Model::FromJson(json::parse(R"({"input_shape": [5, 5, 2], "layers": [
      {"type": "Conv2D", "name": "c1", "filters": 3, "kernel_size": 3, "padding": "same"},
      {"type": "BatchNormalization", "name": "bn"},
      {"type": "DepthwiseConv2D", "name": "dw", "kernel_size": 3, "padding": "same"},
      {"type": "Flatten", "name": "flat"}, {"type": "Dense", "name": "head", "units": 2}]})"),
                                   1);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto report = inference::LoadInitialWeights(model->get(), dir.path() + "/model.json", false, 1 << 20);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->kept.empty());
  EXPECT_TRUE(report->ignored.empty());
  std::ifstream in(dir.path() + "/expected.json");
  const json expected = json::parse(in);
  for (const nn::ParamInfo& p : (*model)->param_infos()) {
    ASSERT_TRUE(expected.contains(p.name)) << p.name;
    const auto values = expected[p.name]["values"].get<std::vector<double>>();
    ASSERT_EQ(values.size(), p.count) << p.name;
    for (size_t i = 0; i < p.count; ++i) {
      ASSERT_EQ((*model)->params()[p.offset + i], static_cast<float>(values[i])) << p.name << "[" << i << "]";
    }
  }
}

void ExpectStorage(const Status& s, Code code, const std::string& also) {
  ASSERT_EQ(s.code(), code) << s.ToString();
  EXPECT_EQ(s.subject(), Subject::kStorage) << "a bad weights file: exit code 6";
  EXPECT_NE(s.message().find(also), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("model.json"), std::string::npos) << s.message();
}

TEST(TfjsWeightsTest, ShortShardIsDataLossNamingTheShard) {
  TempDir dir;
  HandMade h = MakeHandMade();
  h.shard2.pop_back();
  const std::string path = WriteHandMade(dir, h);
  auto model = TwoDense();
  const std::vector<float> before(model->params(), model->params() + model->num_params());
  auto report = inference::LoadInitialWeights(model.get(), path, false, 1 << 20);
  ExpectStorage(report.status(), Code::kDataLoss, "g1-shard2of2.bin");
  EXPECT_EQ(std::memcmp(model->params(), before.data(), before.size() * sizeof(float)), 0) << "model unchanged";
}

TEST(TfjsWeightsTest, LongerShardsAreDataLoss) {
  TempDir dir;
  HandMade h = MakeHandMade();
  h.shard3 += "xxxx";
  auto r = ReadWeightsFile(WriteHandMade(dir, h), nullptr, 1 << 20);
  ExpectStorage(r.status(), Code::kDataLoss, "g2-shard1of1.bin");
}

TEST(TfjsWeightsTest, MissingShardIsNotFound) {
  TempDir dir;
  const std::string path = WriteHandMade(dir, MakeHandMade());
  std::remove((dir.path() + "/g2-shard1of1.bin").c_str());
  auto r = ReadWeightsFile(path, nullptr, 1 << 20);
  ExpectStorage(r.status(), Code::kNotFound, "g2-shard1of1.bin");
}

TEST(TfjsWeightsTest, UnknownDtypeAndQuantizationAreUnimplemented) {
  TempDir dir;
  HandMade h = MakeHandMade();
  h.manifest[1]["weights"][2]["dtype"] = "complex64";
  auto r = ReadWeightsFile(WriteHandMade(dir, h), nullptr, 1 << 20);
  ExpectStorage(r.status(), Code::kUnimplemented, "complex64");
  h = MakeHandMade();
  h.manifest[0]["weights"][1]["quantization"]["dtype"] = "int4";
  r = ReadWeightsFile(WriteHandMade(dir, h), nullptr, 1 << 20);
  ExpectStorage(r.status(), Code::kUnimplemented, "int4");
}

TEST(TfjsWeightsTest, NotAManifestIsDataLoss) {
  TempDir dir;
  const std::string path = dir.path() + "/model.json";
  WriteBytes(path, "{\"modelTopology\": {}}");
  ExpectStorage(ReadWeightsFile(path, nullptr, 1 << 20).status(), Code::kDataLoss, "weightsManifest");
  WriteBytes(path, "{\"weightsManifest\": [");
  ExpectStorage(ReadWeightsFile(path, nullptr, 1 << 20).status(), Code::kDataLoss, "JSON");
}

TEST(TfjsWeightsTest, HalfToFloatIsExact) {
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xC000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(HalfToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
}

}  // namespace
}  // namespace ringtrain::modelfiles
