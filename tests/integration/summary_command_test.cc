// `ringtrain summary`: Keras' model.summary() of a job file's, a Keras model JSON's and a
// compact model's model, as a table and as JSON, without reading data; and one line with
// exit code 2 for each kind of bad file.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

ProcessResult Summary(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"summary"};
  all.insert(all.end(), args.begin(), args.end());
  Process p(RingtrainBinary(), all, {});
  return p.Wait(120);
}

nlohmann::json SummaryJson(const std::string& path) {
  ProcessResult r = Summary({path, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // The JSON follows any INFO line (stderr) about how the file was read.
  const size_t start = r.output.rfind("\n{", std::string::npos) == std::string::npos || r.output.rfind("{", 0) == 0
                           ? 0
                           : r.output.find("\n{") + 1;
  nlohmann::json j = nlohmann::json::parse(r.output.substr(start), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  return j;
}

// The shipped VGG16 transfer job: Keras documents 14,714,688 parameters for
// VGG16(include_top=False), the layers named block*; the rest is the job's head.
TEST(SummaryCommandTest, AJobsModelWithKerasParameterCounts) {
  const std::string job = SourceDir() + "/deploy/jobs/vgg16_transfer.json";
  const nlohmann::json raw = nlohmann::json::parse(ReadFileOrEmpty(job));
  nlohmann::json s = SummaryJson(job);
  ASSERT_TRUE(s.contains("layers")) << s.dump();
  uint64_t base = 0, frozen = 0, trainable = 0, total = 0;
  for (const auto& layer : s["layers"]) {
    const uint64_t p = layer["params"].get<uint64_t>();
    if (layer["name"].get<std::string>().rfind("block", 0) == 0) base += p;
    total += p;
    trainable += layer["trainable_params"].get<uint64_t>();
    frozen += layer["non_trainable_params"].get<uint64_t>();
    EXPECT_EQ(layer["output_shape"][0], nullptr) << layer.dump();
  }
  EXPECT_EQ(base, 14714688u);
  EXPECT_EQ(s["total_params"].get<uint64_t>(), total);
  EXPECT_EQ(s["trainable_params"].get<uint64_t>(), trainable);
  EXPECT_EQ(s["non_trainable_params"].get<uint64_t>(), frozen);
  // Frozen layers' weights are Keras' non-trainable parameters.
  uint64_t frozen_in_job = 0;
  for (const auto& l : raw["model"]["layers"]) {
    if (!l.value("trainable", true)) {
      for (const auto& row : s["layers"]) {
        if (row["name"] == l["name"]) frozen_in_job += row["params"].get<uint64_t>();
      }
    }
  }
  EXPECT_GT(frozen_in_job, 0u);
  EXPECT_EQ(frozen, frozen_in_job);
  EXPECT_EQ(s["name"], raw["model"]["name"]);
  EXPECT_EQ(s["input"]["shape"], nlohmann::json({nullptr, 224, 224, 3}));

  // The table: the same rows and totals, with Keras 3's sizes.
  ProcessResult t = Summary({job});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  for (const std::string& part : {"Model: \"" + raw["model"]["name"].get<std::string>() + "\"",
                                 std::string("block1_conv1 (Conv2D)"), std::string("(None, 224, 224, 64)"),
                                 std::string("1,792"), std::string("Total params: "),
                                 std::string("Non-trainable params: ")}) {
    EXPECT_NE(t.output.find(part), std::string::npos) << "missing '" << part << "' in\n" << t.output;
  }
}

TEST(SummaryCommandTest, NeedsNoData) {
  TempDir tmp;
  auto job = SmallSyntheticJob(tmp.path());
  job["data"] = {{"train", {{"format", "npz"}, {"path", tmp.path() + "/absent.npz"}}}};
  WriteFile(tmp.path() + "/job.json", job.dump());
  ProcessResult r = Summary({tmp.path() + "/job.json"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Trainable params: "), std::string::npos) << r.output;
}

// A Keras 3 functional model (model.to_json()) with a residual Add: the InputLayer row
// and "Connected to" as Keras prints them.
TEST(SummaryCommandTest, AKerasModelJsonIsFunctionalWithConnections) {
  const std::string path = SourceDir() + "/tests/nn/keras_json/keras3_residual.json";
  nlohmann::json s = SummaryJson(path);
  EXPECT_EQ(s["class_name"], "Functional");
  bool merge_seen = false;
  for (const auto& layer : s["layers"]) {
    if (layer["connected_to"].size() == 2) merge_seen = true;
  }
  EXPECT_TRUE(merge_seen) << s.dump();
  ProcessResult t = Summary({path});
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("Connected to"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("(InputLayer)"), std::string::npos) << t.output;
}

// The same model as a JSON string holding its JSON (json.dump(model.to_json())), and a
// TensorFlow.js model.json: the same table.
TEST(SummaryCommandTest, TheFormsKerasFilesComeIn) {
  TempDir tmp;
  const std::string plain = SourceDir() + "/tests/nn/keras_json/keras3_residual.json";
  WriteFile(tmp.path() + "/as_string.json", nlohmann::json(ReadFileOrEmpty(plain)).dump());
  nlohmann::json a = SummaryJson(plain), b = SummaryJson(tmp.path() + "/as_string.json");
  EXPECT_EQ(a, b);
  ProcessResult r = Summary({tmp.path() + "/as_string.json"});
  EXPECT_NE(r.output.find("as_string.json' holds the model JSON as a JSON string"), std::string::npos) << r.output;
  nlohmann::json t = SummaryJson(SourceDir() + "/tests/nn/keras_json/tfjs_model_json_layers_model.json");
  EXPECT_GT(t.value("total_params", 0), 0) << t.dump();
}

// A .keras archive (Keras 3's zip): its config.json is the model; a truncated archive is
// a storage error (exit 6) naming the file.
TEST(SummaryCommandTest, AKerasArchive) {
  TempDir tmp;
  const std::string plain = SourceDir() + "/tests/nn/keras_json/keras3_residual.json";
  const std::string archive = tmp.path() + "/model.keras";
  Process zip("/usr/bin/python3",
              {"-c",
               "import sys, zipfile\n"
               "with zipfile.ZipFile(sys.argv[2], 'w') as z:\n"
               "    z.writestr('metadata.json', '{\"keras_version\": \"3.5.0\"}')\n"
               "    z.writestr('config.json', open(sys.argv[1]).read())\n"
               "    z.writestr('model.weights.h5', b'')\n",
               plain, archive},
              {});
  ASSERT_EQ(zip.Wait(60).exit_code, 0);
  EXPECT_EQ(SummaryJson(archive), SummaryJson(plain));
  const std::string bytes = ReadFileOrEmpty(archive);
  WriteFile(tmp.path() + "/cut.keras", bytes.substr(0, bytes.size() / 2));
  ProcessResult r = Summary({tmp.path() + "/cut.keras"});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_NE(r.output.find("cut.keras"), std::string::npos) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
}

TEST(SummaryCommandTest, ACompactModel) {
  TempDir tmp;
  WriteFile(tmp.path() + "/m.json", R"({"input_shape": [4], "layers": [{"type": "dense", "units": 3}]})");
  nlohmann::json s = SummaryJson(tmp.path() + "/m.json");
  EXPECT_EQ(s["class_name"], "Sequential");
  EXPECT_EQ(s["total_params"], 15);
  EXPECT_EQ(s["layers"][0]["class_name"], "Dense");
  ProcessResult t = Summary({tmp.path() + "/m.json"});
  EXPECT_NE(t.output.find("Total params: 15 (60.00 B)"), std::string::npos) << t.output;
}

// Several inputs (one InputLayer row each), several outputs, and a layer called twice (one
// row, its weights counted once, connected to what each call takes).
TEST(SummaryCommandTest, SeveralInputsOutputsAndASharedLayer) {
  TempDir tmp;
  WriteFile(tmp.path() + "/m.json", R"({"inputs": [{"name": "left", "shape": [4]}, {"name": "right", "shape": [4]}],
      "outputs": ["a", "b"], "layers": [
      {"type": "dense", "name": "enc", "units": 3, "inputs": ["left"]},
      {"shares": "enc", "name": "enc_1", "inputs": ["right"]},
      {"type": "concatenate", "name": "joined", "inputs": ["enc", "enc_1"]},
      {"type": "dense", "name": "a", "units": 2},
      {"type": "dense", "name": "b", "units": 1, "inputs": ["joined"]}]})");
  nlohmann::json s = SummaryJson(tmp.path() + "/m.json");
  EXPECT_EQ(s["inputs"].size(), 2u);
  EXPECT_EQ(s["outputs"], nlohmann::json::array({"a", "b"}));
  EXPECT_EQ(s["total_params"], 15 + 14 + 7);
  ASSERT_EQ(s["layers"].size(), 4u) << s.dump();
  EXPECT_EQ(s["layers"][0]["connected_to"], nlohmann::json::array({"left", "right"}));
  ProcessResult t = Summary({tmp.path() + "/m.json"});
  EXPECT_NE(t.output.find(" left (InputLayer)"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find(" right (InputLayer)"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("left[0][0], right[0][0]"), std::string::npos) << t.output;
}

// One line, exit 2, for every bad file.
TEST(SummaryCommandTest, BadFilesGiveOneLineAndExit2) {
  TempDir tmp;
  const std::string d = tmp.path();
  WriteFile(d + "/text.json", "not json at all");
  WriteFile(d + "/array.json", "[1, 2]");
  WriteFile(d + "/other.json", R"({"hello": 1})");
  WriteFile(d + "/layer.json", R"({"input_shape": [4], "layers": [{"type": "NoSuchLayer"}]})");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{d + "/absent.json"}, "cannot be read"},
      {{d + "/text.json"}, "is not JSON"},
      {{d + "/array.json"}, "not an object"},
      {{d + "/other.json"}, "neither a job file"},
      {{d + "/layer.json"}, "NoSuchLayer"},
      {{}, "usage: ringtrain summary"},
      {{d + "/layer.json", "--bogus"}, "bogus"},
  };
  for (const auto& [args, want] : cases) {
    ProcessResult r = Summary(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
