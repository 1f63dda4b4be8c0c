// Loading saved weights into the job's model: the exact bits come back, and every way
// the file and the job can disagree is named.
#include "inference/saved_model.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <vector>

#include "common/exit_policy.h"

#include "checkpoint/safetensors.h"
#include "env/file_util.h"
#include "testing/temp_dir.h"

namespace ringtrain::inference {
namespace {

using ::ringtrain::testing::TempDir;

const char kJob[] = R"({
  "model": {"input_shape": [8, 8], "layers": [
    {"type": "reshape", "target_shape": [8, 8, 1]},
    {"type": "conv2d", "filters": 3, "kernel_size": 3, "activation": "relu"},
    {"type": "max_pooling2d"},
    {"type": "flatten"},
    {"type": "dense", "units": 5}]},
  "optimizer": {"type": "sgd", "learning_rate": 0.1},
  "data": {"train": {"format": "synthetic", "count": 64, "shape": [8, 8], "classes": 5, "seed": 1}},
  "batch_size_per_worker": 8, "seed": 11
})";

config::JobConfig Job(uint64_t seed = 11) {
  auto job = config::ParseJobConfig(kJob, "/tmp");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  job->seed = seed;
  return *job;
}

std::unique_ptr<nn::Model> Build(uint64_t seed) {
  auto m = nn::Model::FromJson(Job().model, seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Weights no initialiser would produce (biases included), so a load that skipped a
// tensor or mixed two up would show.
void Scramble(nn::Model* m) {
  for (size_t i = 0; i < m->num_params(); ++i) m->params()[i] = static_cast<float>((i * 7919) % 211) / 97.0f - 1.0f;
}

std::vector<checkpoint::TensorView> Views(const nn::Model& m) {
  std::vector<checkpoint::TensorView> v;
  for (const auto& p : m.param_infos()) v.push_back({p.name, p.shape, m.params() + p.offset});
  return v;
}

std::vector<float> Input(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 31) % 17) / 17.0f;
  return x;
}

std::map<std::string, checkpoint::Tensor> Tensors(const nn::Model& m) {
  std::map<std::string, checkpoint::Tensor> t;
  for (const auto& p : m.param_infos()) {
    t[p.name] = {p.shape, std::vector<float>(m.params() + p.offset, m.params() + p.offset + p.count)};
  }
  return t;
}

TEST(SavedModelTest, LoadedModelGivesTheSavedModelsLogitsBitForBit) {
  TempDir tmp;
  auto original = Build(3);
  Scramble(original.get());
  const std::string path = tmp.path() + "/model.safetensors";
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, Views(*original), {{"format", "ringtrain"}}).ok());

  // The job's seed differs from the original's: only the file can supply the weights.
  auto loaded = LoadModel(Job(99), path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ((*loaded)->num_params(), original->num_params());
  EXPECT_EQ(std::memcmp((*loaded)->params(), original->params(), original->num_params() * sizeof(float)), 0);

  const int batch = 6;
  const std::vector<float> x = Input(batch * original->input_size());
  const float* a = original->Forward(x.data(), batch, false);
  std::vector<float> expected(a, a + batch * original->num_classes());
  const float* b = (*loaded)->Forward(x.data(), batch, false);
  EXPECT_EQ(std::memcmp(b, expected.data(), expected.size() * sizeof(float)), 0);
}

TEST(SavedModelTest, MissingFileIsNotFoundAndNamesThePath) {
  TempDir tmp;
  auto r = LoadModel(Job(), tmp.path() + "/nope.safetensors");
  ASSERT_EQ(r.status().code(), Code::kNotFound) << r.status().ToString();
  EXPECT_NE(r.status().message().find("nope.safetensors"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("save_model"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().subject(), Subject::kStorage) << "a model file that cannot be read: exit code 6";
}

TEST(SavedModelTest, CorruptFileIsDataLossAndNamesThePath) {
  TempDir tmp;
  const std::string path = tmp.path() + "/bad.safetensors";
  ASSERT_TRUE(env::WriteFileAtomically(env::Default(), path, "this is not a safetensors file").ok());
  auto r = LoadModel(Job(), path);
  ASSERT_EQ(r.status().code(), Code::kDataLoss) << r.status().ToString();
  EXPECT_NE(r.status().message().find("bad.safetensors"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().subject(), Subject::kStorage);
}

TEST(SavedModelTest, BadModelSectionIsInvalidArgument) {
  config::JobConfig job = Job();
  job.model["layers"][4]["units"] = -1;
  auto r = LoadModel(job, "/nonexistent.safetensors");
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("job: model"), std::string::npos) << r.status().message();
}

TEST(SavedModelTest, WrongShapeNamesTheTensorAndBothShapes) {
  TempDir tmp;
  // The same layer names, a different conv: conv2d/kernel [3, 3, 1, 4] against [3, 3, 1, 3].
  config::JobConfig other = Job();
  other.model["layers"][1]["filters"] = 4;
  auto wider = nn::Model::FromJson(other.model, 1);
  ASSERT_TRUE(wider.ok());
  const std::string path = tmp.path() + "/wider.safetensors";
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, Views(**wider), {}).ok());
  auto r = LoadModel(Job(), path);
  ASSERT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
  const std::string m = r.status().message();
  EXPECT_NE(m.find("the job's model and " + path + " disagree"), std::string::npos) << m;
  EXPECT_NE(m.find("tensor 'conv2d/kernel' has shape [3, 3, 1, 4] in the file but [3, 3, 1, 3] in the model"), std::string::npos) << m;
  EXPECT_NE(m.find("and 2 more"), std::string::npos) << m;  // conv2d/bias and dense/kernel too
}

TEST(SavedModelTest, MissingAndExtraTensorsAreNamed) {
  auto model = Build(1);
  auto tensors = Tensors(*model);
  tensors.erase("dense/bias");
  Status missing = LoadWeights(model.get(), tensors, "m.safetensors");
  ASSERT_EQ(missing.code(), Code::kFailedPrecondition);
  EXPECT_NE(missing.message().find("the model has parameter 'dense/bias' [5] but the file has no tensor"),
            std::string::npos)
      << missing.message();

  tensors = Tensors(*model);
  tensors["dense_1/kernel"] = {{5, 2}, std::vector<float>(10)};
  Status extra = LoadWeights(model.get(), tensors, "m.safetensors");
  ASSERT_EQ(extra.code(), Code::kFailedPrecondition);
  EXPECT_NE(extra.message().find("the file has tensor 'dense_1/kernel' [5, 2] that the model does not have"),
            std::string::npos)
      << extra.message();
  EXPECT_NE(extra.message().find("dense/kernel [27, 5]"), std::string::npos) << extra.message();
}

TEST(SavedModelTest, AFailedLoadLeavesTheModelUnchanged) {
  auto model = Build(1);
  const std::vector<float> before(model->params(), model->params() + model->num_params());
  auto tensors = Tensors(*model);
  for (auto& [name, t] : tensors) std::fill(t.data.begin(), t.data.end(), 42.0f);
  tensors["dense/bias"].shape = {6};
  tensors["dense/bias"].data.resize(6);
  ASSERT_FALSE(LoadWeights(model.get(), tensors, "m").ok());
  EXPECT_EQ(std::memcmp(model->params(), before.data(), before.size() * sizeof(float)), 0);
}

// A model file holding NaN or infinity would evaluate to "loss: nan": refused, naming
// the file, the tensor and the first bad index; a model-file problem (exit 6).
TEST(SavedModelTest, NonFiniteWeightsAreRefused) {
  TempDir tmp;
  auto m = Build(3);
  Scramble(m.get());
  const auto& bias = m->param_infos().back();
  m->params()[bias.offset + 2] = std::nanf("");
  const std::string path = tmp.path() + "/nan.safetensors";
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, Views(*m), {}).ok());
  auto r = LoadModel(Job(), path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDataLoss);
  EXPECT_EQ(ExitCodeFor(r.status()), kExitCheckpoint);
  EXPECT_NE(r.status().message().find("model file '" + path + "': tensor '" + bias.name + "' holds NaN at index 2"),
            std::string::npos) << r.status().message();
  m->params()[bias.offset + 2] = -std::numeric_limits<float>::infinity();
  ASSERT_TRUE(checkpoint::SaveSafetensors(path, Views(*m), {}).ok());
  EXPECT_NE(LoadModel(Job(), path).status().message().find("holds -infinity at index 2"), std::string::npos);
}

// /dev/zero, a FIFO or a directory as the model: refused at once, never read.
TEST(SavedModelTest, SpecialFilesAreRefusedAsModelFileProblems) {
  TempDir tmp;
  ASSERT_EQ(::mkfifo((tmp.path() + "/fifo").c_str(), 0600), 0);
  for (const std::string& path : {std::string("/dev/zero"), tmp.path() + "/fifo", tmp.path()}) {
    auto r = LoadModel(Job(), path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(ExitCodeFor(r.status()), kExitCheckpoint) << r.status().message();
    EXPECT_NE(r.status().message().find("'" + path + "' is a"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(ExitCodeFor(LoadModel(Job(), tmp.path() + "/nope").status()), kExitCheckpoint);
}

// A file longer than the job's model could need is not read in full.
TEST(SavedModelTest, AFileLargerThanTheModelCouldNeedIsRefused) {
  TempDir tmp;
  const std::string path = tmp.path() + "/huge.safetensors";
  {
    std::ofstream f(path, std::ios::binary);
    f.seekp(200'000'000);
    f.put('x');  // sparse: 200 MB on paper, nothing on disk
  }
  auto r = LoadModel(Job(), path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ExitCodeFor(r.status()), kExitCheckpoint);
  EXPECT_NE(r.status().message().find("more than the"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("the model file of this job's model may have"), std::string::npos)
      << r.status().message();
}

// The memory check of evaluate/predict: the batch flag is named when it is the cause.
TEST(SavedModelTest, InferenceMemoryNamesTheBatchFlag) {
  const config::JobConfig job = Job();
  MemoryBound bound{uint64_t{64} << 20, true};
  EXPECT_TRUE(CheckInferenceMemory(job, job.train_data, "data.train", 64, "--batch_size", bound).ok());
  Status s = CheckInferenceMemory(job, job.train_data, "data.train", 1 << 20, "--batch_size", bound);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(ExitCodeFor(s), kExitBadConfig);
  EXPECT_EQ(s.message().find("--batch_size 1048576 would need about"), 0u) << s.message();
  EXPECT_NE(s.message().find("; lower --batch_size"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ringtrain::inference
